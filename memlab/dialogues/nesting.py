"""A binary file whose reads check JSON nesting, and note lone surrogate escapes, as a streaming parser takes them.

ijson keeps the path of every open level (its prefixes, ``item.item.item...``), so its memory grows with the
square of the nesting depth: a 200 KB file of 100,000 nested lists took the machine's 24 GB before the kernel
killed the run. `NestingGuard` counts brackets outside strings chunk by chunk (numpy, one pass over what the
parser reads anyway) and stops the read past `MAX_DEPTH` levels, before the parser sees the chunk.

ijson's C backend (yajl) reads an escape of half a surrogate pair without a word: ``"ab\\ud800"`` becomes
``'ab?'``, and ``"\\ud800\\u53f8"`` one character of another plane. So the guard also notes which item of the
top-level list holds a surrogate escape that is not one half of a pair beside the other (`surrogate_span`), for
the loader to read that item again with `json` and name the string (`memlab.dialogues.source.lone_surrogate`).
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
# An escape of a UTF-16 surrogate, \uD800-\uDFFF: its first four bytes, "\ud" and a digit 8-f (of a high half: 8-b).
_U, _D = ord("u"), ord("d")
_HALF, _HIGH = np.zeros(256, bool), np.zeros(256, bool)
_HALF[list(b"89abcdefABCDEF")], _HIGH[list(b"89abAB")] = True, True
_ESCAPE = 6  # bytes of an escape, \uXXXX
_HELD = 2 * _ESCAPE  # bytes of a chunk searched again with the next: a pair, and the byte before it


class NestingGuard:
    """`file` read through `read`, each chunk checked: deeper than `limit` open lists or objects is a `DatasetError`.

    Each chunk is also searched for surrogate escapes that may stand alone (`surrogate_span`).

    Args:
        file: The JSON file, opened in binary mode (at its start, or after a BOM).
        source: How the error names the file.
        limit: The deepest nesting allowed.
    """

    def __init__(self, file: BinaryIO, source: str, limit: int = MAX_DEPTH) -> None:
        self.file, self.source, self.limit = file, source, limit
        self._depth = 0  # open lists and objects before the next byte
        self._in_string = 0  # 1 inside a string
        self._backslashes = 0  # the run of backslashes the last chunk ended with
        self._offset = file.tell() if file.seekable() else 0  # the file offset of the next byte
        self._items = 0  # items of the top-level list begun so far (each an object or a list)
        self._item_start = -1  # the offset of the last one's first byte
        self._held = b""  # the last chunk's end, searched again with the next: an escape may straddle the two
        self._suspects: dict[int, list[int]] = {}  # item -> [first byte, byte after its last (-1: not read yet)]

    def read(self, size: int = -1) -> bytes:
        data = self.file.read(size)
        if data:
            self._check(data)
        return data

    def surrogate_span(self, item: int) -> tuple[int, int | None] | None:
        """Where item `item` (from 0) of the top-level list lies in the file, as offsets (its end None while it is
        not read to), if it holds a surrogate escape that may be half a pair alone; else None.

        A suspect is no verdict: a surrogate escape at a chunk's edge, or one after an escaped backslash
        (``\\\\ud800``, text), is noted too, and reading the item with `json` decides.
        """
        span = self._suspects.get(item)
        if span is None:
            return None
        return span[0], (None if span[1] < 0 else span[1])

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
        starts = ends = outside[:0]
        if len(outside):
            depth = self._depth + np.cumsum(steps[outside], dtype=np.int64)
            if int(depth.max()) > self.limit:
                at = self._offset + int(outside[np.argmax(depth > self.limit)])
                raise DatasetError(
                    f"{self.source}: the JSON is nested too deeply to read (more than {self.limit} levels at byte "
                    f"offset {at:,})"
                )
            self._depth = int(depth[-1])
            opened = steps[outside] > 0
            starts = outside[opened & (depth == 2)] + self._offset  # an item of the top-level list begins
            ends = outside[~opened & (depth == 1)] + self._offset + 1  # and ends (the byte after it)
        self._note_surrogates(data, starts, ends)
        self._in_string = (self._in_string + len(quotes)) & 1
        trailing = len(data) - len(data.rstrip(b"\\"))
        self._backslashes = self._backslashes + trailing if trailing == len(data) else trailing
        self._offset += len(data)

    def _note_surrogates(self, data: bytes, starts: npt.NDArray[np.intp], ends: npt.NDArray[np.intp]) -> None:
        """Note the items in which `data` (after the end of the last chunk) holds a surrogate escape that is not
        one half of a pair beside the other, or may not be: after a backslash (``\\\\ud800`` is text) or at an
        edge of what is held (its partner not read yet)."""
        open_item = self._items - 1  # the item open when this chunk began (-1: none)
        if len(ends) and open_item in self._suspects and self._suspects[open_item][1] < 0:
            self._suspects[open_item][1] = int(ends[0])
        buf = self._held + data
        b = np.frombuffer(buf, np.uint8)
        slashes = np.flatnonzero(b[:-3] == _BACKSLASH)  # those of the last 3 bytes are searched with the next chunk
        at = slashes[(b[slashes + 1] == _U) & ((b[slashes + 2] | 0x20) == _D) & _HALF[b[slashes + 3]]]
        high = _HIGH[b[at + 3]]
        # at[i] and at[i + 1] a pair: a high half, a low one right after it, and no backslash before the two (at 0,
        # the byte before is not held: b[0] is the backslash itself, so no pair)
        pair = high[:-1] & ~high[1:] & (np.diff(at) == _ESCAPE) & (b[np.maximum(at[:-1] - 1, 0)] != _BACKSLASH)
        paired = np.zeros(len(at), bool)
        paired[:-1] |= pair
        paired[1:] |= pair
        new = at + 4 > len(self._held)  # those whole in the held bytes were searched with the last chunk
        suspect = at[new & ~paired] + self._offset - len(self._held)
        for offset in suspect.tolist():
            began = int(np.searchsorted(starts, offset, "right"))
            item = self._items + began - 1
            if item >= 0 and item not in self._suspects:
                later = ends[ends > offset]
                start = int(starts[began - 1]) if began else self._item_start
                self._suspects[item] = [start, int(later[0]) if len(later) else -1]
        self._items += len(starts)
        if len(starts):
            self._item_start = int(starts[-1])
        self._held = buf[-_HELD:]

    def _escaped(self, b: npt.NDArray[np.uint8], i: int) -> bool:
        """Whether the quote at `i` follows an odd run of backslashes (counting those the last chunk ended with)."""
        run, j = 0, i - 1
        while j >= 0 and b[j] == _BACKSLASH:
            run, j = run + 1, j - 1
        if j < 0:
            run += self._backslashes
        return run % 2 == 1
