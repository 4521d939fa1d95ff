"""Shell completion on TAB without importing the lab: groups and entries from conf/, keys from a cached key tree.

Hydra's own completion composes the config on every TAB (importing hydra, memlab's schemas and every
module they reach: ~0.65 CPU s). Here the group names and their entries come from the conf/ tree's
folders and YAML file names (always current), and config keys from a JSON key tree that
`memlab run -sc install=SHELL` writes (`write_key_tree`, in memlab.cli, where the config is composed):
the default config's keys, and each group entry's own keys for a command line that picks it
(`context=trim context.<TAB>`). Entries of a ``# @package _global_`` group (experiment, debug) change
keys across the config; their keys are not offered. The answers follow Hydra's completion
(hydra.plugins.completion_plugin): ``group=``, ``group/``, ``key.``, ``key=value``, file names after ``=./``.
This module imports the standard library alone (tests/test_startup_imports.py checks a TAB's modules).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
from pathlib import Path

TYPE_CHECKING = False  # typing's, without importing typing (~10% of a TAB)
if TYPE_CHECKING:
    from typing import Any

KEY_TREE_FILE = "completion-keys.json"
COMMAND_WORDS = ("run", "report", "compare", "recommend", "ablate")  # memlab.cli's commands (tested equal)
HIDDEN_GROUPS = ("schema",)  # internal: the structured configs' registry
_PREFIXES = (".", "/", "\\", "./", ".\\")


def conf_dir() -> Path:
    """The conf/ tree memlab composes from (the package memlab.conf: installed or editable, never zipped)."""
    spec = importlib.util.find_spec("memlab.conf")  # not importlib.resources: a fifth of a TAB's time to import
    assert spec is not None and spec.submodule_search_locations is not None
    return Path(next(iter(spec.submodule_search_locations)))


def cache_dir() -> Path:
    """memlab's user cache, $XDG_CACHE_HOME/memlab (default ~/.cache/memlab): the key tree, and tiktoken's parsed
    ranks when $MEMLAB_CACHE is unset (`memlab.bpe_cache`)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "memlab"


def key_tree_path() -> Path:
    """Where the key tree is cached (`cache_dir`)."""
    return cache_dir() / KEY_TREE_FILE


@functools.cache
def read_key_tree() -> dict[str, Any]:
    """The cached key tree, empty when there is none.

    {"default": keys, "entries": {"group=entry": keys}, "groups": {"hydra/...": {"entries": [...], "groups": [...]}}}:
    Hydra's own groups come from Hydra and its plugins' code, not from conf/.
    """
    try:
        tree = json.loads(key_tree_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return tree if isinstance(tree, dict) else {}


def _options(group: str) -> tuple[list[str], list[str]]:
    """The entries (YAML file names) and subgroups (folders holding YAML) of `group` in conf/ ("": the root)."""
    folder = conf_dir() / group if group else conf_dir()
    cached = (read_key_tree().get("groups") or {}).get(group) or {}
    files, dirs = list(cached.get("entries") or []), list(cached.get("groups") or [])
    if not folder.is_dir():
        return files, dirs
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.suffix == ".yaml" and group:
            files.append(path.stem)
        elif path.is_dir() and (group or path.name not in HIDDEN_GROUPS) and _is_group(path):
            dirs.append(path.name)
    return sorted(set(files)), sorted(set(dirs))


def _is_group(folder: Path) -> bool:
    return not folder.name.startswith(("_", ".")) and any(folder.rglob("*.yaml"))


def _groups(word: str) -> tuple[list[str], bool]:
    """Hydra's group matches for `word`: ``group=`` and ``group/`` names, or ``group=entry``; whether exact."""
    prefix = word[0] if word[:1] in ("+", "~") else ""
    word = word[len(prefix) :]
    if "=" in word:
        parent = word[: word.rfind("=")]
        entries = _options(parent)[0]
        return [f"{prefix}{parent}={e}" for e in entries if f"{parent}={e}".startswith(word)], bool(entries)
    parent = word[: word.rfind("/")] if "/" in word else ""
    matched = []
    for sub in _options(parent)[1]:
        name = f"{parent}/{sub}" if parent else sub
        if not name.startswith(word):
            continue
        files, dirs = _options(name)
        if files and not dirs and prefix != "~":
            name += "="
        elif dirs and not files:
            name += "/"
        matched.append(prefix + name)
    return matched, False


def _select(node: Any, key: str) -> Any:
    """The node at dotted `key` of a key tree, None if there is none."""
    for part in key.split(".") if key else []:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _rep(key: object, value: Any) -> str:
    return f"{key}." if isinstance(value, dict | list) else f"{key}="


def _keys(node: Any, word: str) -> list[str]:
    """Hydra's config matches for `word` in a key tree: ``key.`` for a node, ``key=`` for a value."""
    if word.endswith((".", "=")):
        found = _select(node, word[:-1])
        if found is None:
            return []
        if isinstance(found, dict | list):
            return [f"{word}{m}" for m in _keys(found, "")]
        return [f"{word}{str(found).lower() if isinstance(found, bool) else found}"]
    if "." in word:
        base, partial = word[: word.rfind(".")], word[word.rfind(".") + 1 :]
        return [f"{base}.{m}" for m in _keys(_select(node, base), partial)]
    if isinstance(node, dict):
        return [_rep(k, v) for k, v in node.items() if str(k).startswith(word)]
    if isinstance(node, list):
        return [_rep(i, v) for i, v in enumerate(node) if str(i).startswith(word)]
    return []


def _files(key_eq: str, path: str) -> list[str]:
    """Hydra's file-name completion of ``key=./pa``."""
    folder, stem = (path, "") if os.path.isdir(path) else (os.path.dirname(path), os.path.basename(path))
    names = os.listdir(folder) if folder and os.path.isdir(folder) else []
    return [key_eq + os.path.join(folder, n) for n in names if n.startswith(stem)]


def complete(line: str) -> list[str]:
    """The completions of the override being typed at the end of `line` (the words after `memlab run`).

    Args:
        line: The command line's overrides (flags such as -m are skipped), ending with a space for a new word.
    """
    words = [w for w in line.split() if not w.startswith("-")]
    if not line or line.endswith(" ") or not words:
        word = ""
    else:
        word, words = words[-1], words[:-1]
    eq = word.rfind("=")
    if eq != -1 and word[eq + 1 :].lower().startswith(_PREFIXES):
        return sorted(_files(word[: eq + 1], word[eq + 1 :]))
    matched, exact = _groups(word)
    keys: list[str] = []
    if not exact:
        tree = read_key_tree()
        node = dict(tree.get("default") or {})
        for chosen in words:
            group, _, entry = chosen.lstrip("+").partition("=")
            own = (tree.get("entries") or {}).get(f"{group}={entry}")
            if own is not None:
                node[group] = own
        keys = _keys(node, word)
    return sorted(set(matched + keys))


def answer(args: list[str]) -> bool:
    """Answer `memlab -sc query=SHELL` from conf/ and the key tree; False when Hydra has to answer instead.

    Args:
        args: The command line after `memlab` (``["-sc", "query=bash"]`` on TAB, COMP_LINE in the environment).
    """
    if not any(a in ("query=bash", "query=zsh") for a in args):
        return False  # install, uninstall and fish's query (its own line format) go to Hydra
    line = os.environ.get("COMP_LINE", "")
    words = line.split()
    if len(words) < 2 or (len(words) == 2 and not line.endswith(" ")):
        print(" ".join(COMMAND_WORDS))
        return True
    if words[1] != "run":
        return True  # report / compare / recommend take paths: the shell's own completion
    rest = line.split(None, 2)[2] if len(words) > 2 else ""
    print(" ".join(complete(rest if rest.strip() or not line.endswith(" ") else " ")))
    return True
