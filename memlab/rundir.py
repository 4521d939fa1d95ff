"""A run directory, published whole: results are staged beside it and renamed into place at the end.

`publish` writes every file into a staging directory next to the target, fsyncs them, and
makes it the run directory with one rename (an empty target, such as the folder Hydra made,
is replaced; a reused `output_dir` is swapped with ``renameat2(RENAME_EXCHANGE)``). A reader,
or a publisher killed at any step, sees the old directory or the new one, never a mix: a new
`metrics.json` never sits beside another run's files. What else the old directory held (a
SQLite store of the run) is carried over by hard links. Staging folders of killed publishers
are removed by the next publish in the same folder.

`claimed` holds a run folder for one run, from before its replay until it is published: a second run
into the same folder meanwhile is refused (both published, the later over the earlier, and both said
they had succeeded).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import hashlib
import importlib.metadata
import json
import os
import secrets
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memlab.dialogues.model import Dialogue
from memlab.errors import MemlabError, RunFolderBusy

# scipy: the summarizer's TF-IDF and TextRank floats come from its sparse routines, so summaries depend on its version.
MANIFEST_PACKAGES = ("memlab", "hydra-core", "numpy", "scipy", "pandas", "mmh3", "tiktoken", "litellm")
FLOAT_DIGITS = 6


def canonical_json(data: Any) -> str:
    """Sorted keys, rounded floats, trailing newline: the same data gives the same bytes."""

    def norm(x: Any) -> Any:
        if isinstance(x, float):
            return round(x, FLOAT_DIGITS)
        if isinstance(x, Mapping):
            return {str(k): norm(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [norm(v) for v in x]
        return x

    return json.dumps(norm(data), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def data_hash(dialogues: Iterable[Dialogue]) -> str:
    """sha256 over every replayed message and probe, independent of the source file's layout."""
    h = hashlib.sha256()
    for d in dialogues:
        h.update(f"dialogue\0{d.id}\0{d.system_prompt or ''}\0".encode())
        for m in d.messages():
            h.update(json.dumps([m.id, m.role, m.speaker, m.content, [c.to_openai() for c in m.tool_calls]]).encode())
        for p in d.probes:
            h.update(json.dumps([p.id, p.question, p.answer, list(p.evidence), p.category]).encode())
    return h.hexdigest()


def git_revision(start: Path) -> str | None:
    """The checkout's commit, or None outside a git checkout."""
    return _git(start, "rev-parse", "HEAD").strip() or None


def git_state(start: Path) -> dict[str, Any]:
    """Where the code of a run comes from: the commit, whether the checkout differs from it, and how.

    A run from a modified checkout is not the commit it names: `dirty` says so, and `diff_sha256`
    (sha256 of ``git diff HEAD --binary`` and of each untracked, not ignored file's path and bytes)
    tells two modified trees apart. Both are None outside a git checkout.

    Args:
        start: Any folder inside the checkout.

    Returns:
        ``{"git_revision": ..., "dirty": ..., "diff_sha256": ...}`` (the last None for a clean tree).
    """
    revision = git_revision(start)
    if revision is None:
        return {"git_revision": None, "dirty": None, "diff_sha256": None}
    status = _git(start, "status", "--porcelain")
    if not status.strip():
        return {"git_revision": revision, "dirty": False, "diff_sha256": None}
    h = hashlib.sha256(_git(start, "diff", "HEAD", "--binary").encode())
    root = Path(_git(start, "rev-parse", "--show-toplevel").strip())
    for name in sorted(_git(start, "ls-files", "--others", "--exclude-standard", "-z").split("\0")):
        if name and (root / name).is_file():
            h.update(f"\0untracked\0{name}\0".encode())
            h.update((root / name).read_bytes())
    return {"git_revision": revision, "dirty": True, "diff_sha256": h.hexdigest()}


def _git(start: Path, *args: str) -> str:
    """What ``git args`` prints in `start` ("" when git is missing or fails there)."""
    try:
        out = subprocess.run(["git", *args], cwd=start, capture_output=True, text=True, check=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout


def versions(libraries: Iterable[str] = ()) -> dict[str, str | None]:
    """Installed versions (None: not installed) of memlab's core libraries and of `libraries` (a run's peers)."""
    found: dict[str, str | None] = {}
    for name in (*MANIFEST_PACKAGES, *libraries):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


STAGING_PREFIX = ".staging-"
STAGE_TOKEN_BYTES = 8  # a staging folder's name after the pid: one publisher's two stages never meet
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def run_folder(run_dir: Path | str) -> Path:
    """`run_dir` as a run publishes into it: a link followed to the folder it names, its parent made.

    Called before a run replays anything, so that a long run never ends in a place it cannot publish;
    a file there (which publishing would move aside) or a parent that cannot be made is a `MemlabError`.

    Args:
        run_dir: The run's folder, as the config or the caller gives it.
    """
    run_dir = Path(run_dir)
    if run_dir.is_symlink():  # publishing renames into place: it would replace the link, not fill its folder
        run_dir = run_dir.resolve()
    if run_dir.exists() and not run_dir.is_dir():
        raise MemlabError(f"{run_dir}: exists and is not a folder; give the run a folder of its own")
    try:
        run_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise MemlabError(f"{run_dir}: cannot make the folder it goes in ({e.strerror or e})") from None
    if not os.access(run_dir.parent, os.W_OK | os.X_OK):
        raise MemlabError(f"{run_dir}: cannot write in {run_dir.parent}")
    return run_dir


@contextmanager
def claimed(run_dir: Path) -> Iterator[Path]:
    """Hold `run_dir` (made if missing) for one run until it is published; another run holding it is refused.

    The hold is an exclusive ``flock`` on the folder itself, so it ends with the process however it ends (a
    run killed with -9 holds nothing) and leaves no lock file behind. Publishing replaces the held folder by
    another, so a run that starts after this one published holds the new folder and reuses it, as a later
    run into a reused `output_dir` does.

    Args:
        run_dir: The run's folder, as `run_folder` gives it.

    Raises:
        RunFolderBusy: another process holds the folder.
    """
    run_dir.mkdir(exist_ok=True)
    fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _flock_holder(os.fstat(fd))
            who = f"another run (process {holder})" if holder is not None else "another run"
            raise RunFolderBusy(
                f"{run_dir}: {who} is writing into this folder; wait for it to end or give this run a folder "
                "of its own (output_dir=...)"
            ) from None
        yield run_dir
    finally:
        os.close(fd)  # releases the hold


def _flock_holder(folder: os.stat_result) -> int | None:
    """The process holding a ``flock`` on `folder`, from Linux's /proc/locks (None where it cannot be told)."""
    device = f"{os.major(folder.st_dev):02x}:{os.minor(folder.st_dev):02x}:{folder.st_ino}"
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()  # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" ("->" marks a waiter)
        if len(parts) > 5 and parts[1] == "FLOCK" and parts[5] == device and parts[4].isdigit():
            return int(parts[4])
    return None


def outermost_missing(folder: Path) -> Path | None:
    """The outermost of `folder` and its parents that does not exist yet (None: `folder` exists)."""
    missing = None
    for path in (folder, *folder.parents):
        if path.exists():
            return missing
        missing = path
    return missing


def discard_empty(folder: Path, top: Path) -> None:
    """Remove `folder` and its parents up to `top` (a parent of it, or itself) while each is empty."""
    for path in (folder, *folder.parents):
        try:
            path.rmdir()
        except OSError:
            return
        if path == top:
            return


def publish(run_dir: Path, files: Mapping[str, str | bytes], *, replace: Iterable[str] = ()) -> Path:
    """Make `run_dir` hold exactly `files` plus what it held before that is not a result, in one rename.

    `replace` names further entries of an old `run_dir` that belong to a previous run and must not
    be carried over (e.g. a failed run's error marker). The folder gets the modes the umask gives.
    """
    run_dir = run_folder(run_dir)
    parent = run_dir.parent
    stage = _new_stage(parent)
    try:
        for name, content in files.items():
            _write_synced(stage / name, content.encode("utf-8") if isinstance(content, str) else content)
        dropped = set(files) | set(replace)
        if run_dir.is_dir():
            for entry in sorted(run_dir.iterdir()):
                if entry.name not in dropped:
                    _link_tree(entry, stage / entry.name)
        _fsync_dir(stage)
        if not run_dir.exists() or (run_dir.is_dir() and not any(run_dir.iterdir())):
            os.rename(stage, run_dir)  # replaces an empty directory atomically
        else:
            _exchange(stage, run_dir)  # stage now holds the old run
        _fsync_dir(parent)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return run_dir


def write_files(folder: Path, files: Mapping[str, str]) -> dict[str, Path]:
    """Write `files` (name: text) into `folder` as one set; returns their paths.

    They are staged beside it and renamed into place with Ctrl-C and SIGTERM held back until the last rename, so an
    interrupted writer leaves the files as they were or all of them rewritten, never some (a comparison.csv of this
    sweep beside no comparison.html). A writer killed outright (kill -9) between two renames can still leave a mix.
    """
    folder.mkdir(parents=True, exist_ok=True)
    stage = _new_stage(folder)
    try:
        for name, text in files.items():
            _write_synced(stage / name, text.encode("utf-8"))
        with _signals_held():
            for name in files:
                os.replace(stage / name, folder / name)
            stage.rmdir()  # empty now, and gone before a held SIGTERM ends the process
        _fsync_dir(folder)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return {name: folder / name for name in files}


def _new_stage(parent: Path) -> Path:
    """A new staging folder in `parent`, after removing those of writers killed mid-way."""
    _remove_stale_stages(parent)
    stage = parent / f"{STAGING_PREFIX}{os.getpid()}-{secrets.token_hex(STAGE_TOKEN_BYTES)}"
    stage.mkdir()  # not `mkdtemp`, whose 0700 the rename would give every run folder
    return stage


@contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM that arrive in the block take effect as it ends, not inside it.

    Their Python handlers, which raise KeyboardInterrupt, run in the main thread only (whichever thread the signal
    reached): they are swapped for ones that note the signal, and each noted one is raised again after the block,
    SIGTERM first (a Ctrl-C's KeyboardInterrupt raised first would drop it). An ignored signal stays ignored (a
    job started with `&` ignores Ctrl-C: noting it lost a SIGTERM that came after it).
    """
    if threading.current_thread() is not threading.main_thread():  # no signal interrupts this thread
        yield
        return
    noted: list[int] = []
    kept = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    kept = {s: handler for s, handler in kept.items() if handler not in (None, signal.SIG_IGN)}  # None: not Python's
    for s in kept:
        signal.signal(s, lambda signum, _frame: noted.append(signum))
    try:
        yield
    finally:
        for s, handler in kept.items():
            signal.signal(s, handler)
        for s in kept:  # SIGTERM, then SIGINT
            if s in noted:
                signal.raise_signal(s)


def _write_synced(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _link_tree(source: Path, target: Path) -> None:
    """Hard-link `source` (a file or a folder's files) at `target`; copy where links are impossible."""
    if source.is_dir() and not source.is_symlink():
        shutil.copytree(source, target, symlinks=True, copy_function=_link_or_copy)
    else:
        _link_or_copy(str(source), str(target))


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError:
        shutil.copy2(source, target, follow_symlinks=False)


def _exchange(a: Path, b: Path) -> None:
    """Swap two directories atomically (Linux ``renameat2``); elsewhere, two renames in a row."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is not None:
        if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
            return
        if ctypes.get_errno() not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), str(b))
    aside = a.with_name(a.name + ".old")
    os.rename(b, aside)
    os.rename(a, b)
    os.rename(aside, a)


def _remove_stale_stages(parent: Path) -> None:
    """Remove the staging folders that publishers killed mid-way left in `parent` (their process is gone)."""
    for entry in parent.glob(f"{STAGING_PREFIX}*"):
        pid = entry.name.removeprefix(STAGING_PREFIX).split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
