"""tiktoken's BPE rank tables, parsed once and then read from a pickle in memlab's user cache.

tiktoken parses an encoding's ``.tiktoken`` file (200,000 base64 lines for o200k_base, ~0.2 s) in every process
that loads it; unpickling the parsed table takes a third of that. A table is cached under the sha256 of the file's
bytes (a changed file is parsed again), written atomically (a temporary file renamed over the entry) with the
sha256 of its payload in front, and read with no global allowed: a truncated, corrupt or foreign entry is ignored
and written again. Any error writing it is ignored too (a read-only home still runs, parsing each time).

The tables live in ``tiktoken/`` of ``$MEMLAB_CACHE`` when it is set, the one root of memlab's caches (the
configs' response caches are its ``llm/`` and ``embed/``; the test session points it at a temporary folder, so
tests never write the user's caches), else in ``tiktoken/`` of memlab's user cache (``$XDG_CACHE_HOME/memlab``,
by default ``~/.cache/memlab``): unlike a response cache they depend on no project, so by default every
project shares them.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pickle
from collections.abc import Iterator
from pathlib import Path

from memlab.completion import cache_dir

CACHE_ENV = "MEMLAB_CACHE"  # the root of memlab's caches, the parsed tables in its TABLES_FOLDER
TABLES_FOLDER = "tiktoken"
MAGIC = b"memlab-bpe-ranks-v1\n"  # a new layout gets a new magic, so old entries are ignored
_DIGEST = hashlib.sha256().digest_size


def tables_dir() -> Path:
    """The folder of the parsed tables: ``tiktoken/`` in ``$MEMLAB_CACHE``, else in memlab's user cache."""
    return Path(os.environ.get(CACHE_ENV) or cache_dir()) / TABLES_FOLDER


def entry_path(contents: bytes, sha256: str | None = None) -> Path:
    """Where the parsed table of a ``.tiktoken`` file with these bytes is cached (`sha256`: their hash, if known)."""
    return tables_dir() / f"{sha256 or hashlib.sha256(contents).hexdigest()}.pickle"


class _NoGlobals(pickle.Unpickler):
    """A rank table is a dict of bytes to ints: a pickle that names any class or function is not one."""

    def find_class(self, module: str, name: str) -> type:
        raise pickle.UnpicklingError(f"{module}.{name} in a cached rank table")


def read_entry(path: Path) -> dict[bytes, int] | None:
    """The table cached at `path`, or None when there is none or it is not intact."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    digest, payload = data[len(MAGIC) : len(MAGIC) + _DIGEST], data[len(MAGIC) + _DIGEST :]
    if not data.startswith(MAGIC) or hashlib.sha256(payload).digest() != digest:
        return None
    try:
        ranks = _NoGlobals(io.BytesIO(payload)).load()
    except Exception:  # anything a damaged pickle raises means "not cached"
        return None
    return ranks if isinstance(ranks, dict) else None


def write_entry(path: Path, ranks: dict[bytes, int]) -> None:
    """Cache `ranks` at `path` atomically: readers see the old entry, none, or the whole new one."""
    import tempfile  # here: only a first load writes

    payload = pickle.dumps(ranks, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        pass  # no cache: the next process parses the file again


def load_ranks(tiktoken_bpe_file: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """`tiktoken.load.load_tiktoken_bpe` with its result cached: the same checks, the same table."""
    from tiktoken.load import load_tiktoken_bpe, read_file_cached

    # tiktoken's own sha256 check; a file that passed it has that hash, so it is not hashed a second time
    path = entry_path(read_file_cached(tiktoken_bpe_file, expected_hash), expected_hash)
    ranks = read_entry(path)
    if ranks is None:
        ranks = load_tiktoken_bpe(tiktoken_bpe_file, expected_hash)
        write_entry(path, ranks)
    return ranks


@contextlib.contextmanager
def cached_openai_encodings() -> Iterator[None]:
    """While an encoding loads, tiktoken's OpenAI constructors read their rank tables through `load_ranks`.

    The constructors (`tiktoken_ext.openai_public`) call the module's `load_tiktoken_bpe` by name and keep
    their patterns and special tokens to themselves, so that name is swapped for the duration rather than
    their patterns copied here. tiktoken builds encodings under its registry lock; memlab loads each once
    (`memlab.tokens.load_encoding`).
    """
    from tiktoken_ext import openai_public

    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = load_ranks
    try:
        yield
    finally:
        openai_public.load_tiktoken_bpe = original
