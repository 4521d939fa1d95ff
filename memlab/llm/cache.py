"""The on-disk response cache that makes a sweep pay once for each distinct provider request.

A request is keyed by the sha256 of its canonical JSON (model, messages or inputs, parameters,
api_base; never the API key), and its response is stored as one small JSON file under
``<dir>/<key[:2]>/<key>.json``, written atomically, so parallel runs can share the folder;
`lock(key)` is an exclusive file lock (``<key[:2]>/.lock-<key[2:4]>``: one of 65,536, so that a request
waiting out its retries and a server's Retry-After holds up one in 65,536 others, not one in 256) that a
backend holds while it asks for a missing response, so concurrent runs pay once for it.
The configs' default folder is ``$MEMLAB_CACHE/<llm|embed>`` (the root of memlab's caches: `memlab.bpe_cache`
keeps tiktoken's parsed ranks in its ``tiktoken/``), else ``.memlab-cache/<llm|embed>`` in the working directory;
in Python, no folder (the default) caches nothing.

>>> request_key({"model": "m", "messages": []}) == request_key({"messages": [], "model": "m"})
True
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def request_key(request: dict[str, Any]) -> str:
    """The sha256 of a request's canonical JSON (key order and whitespace do not matter)."""
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """JSON responses by request key in a folder; a `None` folder caches nothing."""

    def __init__(self, folder: str | os.PathLike[str] | None) -> None:
        self.folder = Path(folder) if folder else None

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / key[:2] / f"{key}.json"

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Hold the exclusive lock of `key`'s bucket (shared with other processes); nothing without a folder."""
        if self.folder is None:
            yield
            return
        shard = self._path(key).parent
        shard.mkdir(parents=True, exist_ok=True)
        with open(shard / f".lock-{key[2:4]}", "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def get(self, key: str) -> dict[str, Any] | None:
        if self.folder is None:
            return None
        try:
            stored = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):  # absent, or a torn file from a killed writer
            return None
        response = stored.get("response")
        return response if isinstance(response, dict) else None

    def put(self, key: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        """Store `response` (and the request, for a reader who wonders what a file is) under `key`."""
        if self.folder is None:
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"request": request, "response": response}, ensure_ascii=False, default=str)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(body)
        os.replace(tmp, path)
