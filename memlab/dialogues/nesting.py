"""A binary file whose reads check JSON nesting as a streaming parser takes them.

ijson keeps the path of every open level (its prefixes, ``item.item.item...``), so its memory grows with the
square of the nesting depth: a 200 KB file of 100,000 nested lists took the machine's 24 GB before the kernel
killed the run. `NestingGuard` counts brackets outside strings chunk by chunk (numpy, one pass over what the
parser reads anyway) and stops the read past `MAX_DEPTH` levels, before the parser sees the chunk.
"""

from __future__ import annotations

from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from memlab.errors import DatasetError

MAX_DEPTH = 64  # LongMemEval's questions nest 4 levels (list, question, haystack, session, turn)
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_STEPS = np.zeros(256, np.int8)  # what each byte does to the depth outside strings
_STEPS[list(b"[{")], _STEPS[list(b"]}")] = 1, -1


class NestingGuard:
    """`file` read through `read`, each chunk checked: deeper than `limit` open lists or objects is a `DatasetError`.

    Args:
        file: The JSON file, opened in binary mode.
        source: How the error names the file.
        limit: The deepest nesting allowed.
    """

    def __init__(self, file: BinaryIO, source: str, limit: int = MAX_DEPTH) -> None:
        self.file, self.source, self.limit = file, source, limit
        self._depth = 0  # open lists and objects before the next byte
        self._in_string = 0  # 1 inside a string
        self._backslashes = 0  # the run of backslashes the last chunk ended with
        self._offset = 0  # bytes read so far

    def read(self, size: int = -1) -> bytes:
        data = self.file.read(size)
        if data:
            self._check(data)
        return data

    def _check(self, data: bytes) -> None:
        b = np.frombuffer(data, np.uint8)
        quotes = np.flatnonzero(b == _QUOTE)
        if len(quotes):  # a quote after an odd run of backslashes is escaped: not a string's end or start
            before = b[np.maximum(quotes - 1, 0)]
            if quotes[0] == 0:
                before[0] = _BACKSLASH if self._backslashes else 0
            escaped = [k for k in np.flatnonzero(before == _BACKSLASH) if self._escaped(b, int(quotes[k]))]
            quotes = np.delete(quotes, escaped)
        steps = _STEPS[b]
        brackets = np.flatnonzero(steps)
        outside = brackets[((self._in_string + np.searchsorted(quotes, brackets)) & 1) == 0]
        if len(outside):
            depth = self._depth + np.cumsum(steps[outside], dtype=np.int64)
            if int(depth.max()) > self.limit:
                at = self._offset + int(outside[np.argmax(depth > self.limit)])
                raise DatasetError(
                    f"{self.source}: the JSON is nested too deeply to read (more than {self.limit} levels at byte "
                    f"offset {at:,})"
                )
            self._depth = int(depth[-1])
        self._in_string = (self._in_string + len(quotes)) & 1
        trailing = len(data) - len(data.rstrip(b"\\"))
        self._backslashes = self._backslashes + trailing if trailing == len(data) else trailing
        self._offset += len(data)

    def _escaped(self, b: npt.NDArray[np.uint8], i: int) -> bool:
        """Whether the quote at `i` follows an odd run of backslashes (counting those the last chunk ended with)."""
        run, j = 0, i - 1
        while j >= 0 and b[j] == _BACKSLASH:
            run, j = run + 1, j - 1
        if j < 0:
            run += self._backslashes
        return run % 2 == 1
