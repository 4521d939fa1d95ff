"""JSON nested past what a dataset needs is refused while it is streamed, in one line, before the parser's memory
grows with the square of the depth (a 200 KB LongMemEval file of nested lists took 24 GB and was killed)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memlab.dialogues import load_longmemeval
from memlab.dialogues.nesting import MAX_DEPTH, NestingGuard
from memlab.dialogues.source import PROJECT_ROOT, lone_surrogate
from memlab.errors import DatasetError

# Strings made of what the count must see through: brackets, quotes and runs of backslashes.
TEXT = st.text(alphabet=st.sampled_from('[]{}"\\ab'), max_size=8)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=40,
)


def _depth(value: Any) -> int:
    """Open lists and objects at the deepest point, as a recursive walk of the parsed value counts them."""
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


class _Chunks(io.RawIOBase):
    """`data` handed out `size` bytes at a time, whatever the reader asks for: every place a chunk can end."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size, self.at = data, size, 0

    def read(self, n: int = -1) -> bytes:  # type: ignore[override]
        chunk = self.data[self.at : self.at + self.size]
        self.at += len(chunk)
        return chunk


@settings(max_examples=300)
@example(value=["a\\", [[["x"]]]], size=1, limit=3)  # a run of backslashes over several chunks, then a quote
@given(value=JSON, size=st.integers(1, 7), limit=st.integers(0, 6))
def test_the_guard_counts_depth_as_the_parsed_value_has_it(value: Any, size: int, limit: int) -> None:
    data = json.dumps(value).encode()
    guard = NestingGuard(_Chunks(data, size), "x.json", limit)  # type: ignore[arg-type]
    try:
        read = b"".join(iter(lambda: guard.read(size), b""))
    except DatasetError:
        assert _depth(value) > limit
    else:
        assert read == data and _depth(value) <= limit


# Pieces of text whose escapes the surrogate search must see through: halves alone, pairs, escaped backslashes.
PIECES = st.sampled_from(["\ud800", "\udbff", "\udc00", "\U0001f600", "\u53f8", "\\", "\\ud800", "\\ud83d", "a", '"'])
ITEMS = st.lists(st.lists(st.lists(PIECES, max_size=4).map("".join), max_size=3).map(lambda t: {"t": t}), max_size=4)


@settings(max_examples=300)
@example(items=[{"t": ["\U0001f600"]}], size=14, bom=False)  # a pair split by the chunks' edge: noted, then read again
@example(items=[{"t": ["\\ud83d\udc00"]}], size=13, bom=False)  # the text \ud83d, then a low half alone
@example(items=[{"t": ["\\" * 3 + "\\ud83d\udc00"]}], size=9, bom=False)  # after more backslashes
@given(items=ITEMS, size=st.integers(1, 13), bom=st.booleans())
def test_every_item_holding_half_a_surrogate_pair_is_noted_with_its_place(
    items: list[Any], size: int, bom: bool
) -> None:
    """No lone half is missed wherever the chunks end; a noted item's span is that item (its bytes read back)."""
    data = ("\ufeff" if bom else "").encode() + json.dumps(items).encode()  # json writes each as \uXXXX
    guard = NestingGuard(_Chunks(data, size), "x.json")  # type: ignore[arg-type]
    assert b"".join(iter(lambda: guard.read(size), b"")) == data
    for k, item in enumerate(json.loads(data.decode("utf-8-sig"))):
        span = guard.surrogate_span(k)
        if lone_surrogate(item, "") is not None:
            assert span is not None
        if span is not None:
            start, end = span
            assert end is not None and json.loads(data[start:end]) == item


def test_a_deeply_nested_longmemeval_file_is_one_line_and_little_memory(tmp_path: Path) -> None:
    """In a process of its own, its address space capped at 2 GB: the old read needed 24 GB."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    code = (
        "import resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({2 << 30}, {2 << 30}))\n"
        "from memlab.dialogues import load_longmemeval\n"
        "from memlab.errors import DatasetError\n"
        "try:\n"
        f"    list(load_longmemeval({str(deep)!r}))\n"
        "except DatasetError as e:\n"
        "    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    said = f"{deep}: the JSON is nested too deeply to read (more than {MAX_DEPTH} levels at byte offset {MAX_DEPTH})\n"
    assert done.stdout == said


def test_the_sample_reads_through_the_guard_as_it_is(tmp_path: Path) -> None:
    """Escaped quotes and brackets inside the questions' strings do not count."""
    sample = PROJECT_ROOT / "datasets" / "longmemeval_sample.json"
    raw = json.loads(sample.read_text(encoding="utf-8"))
    raw[0]["question"] += ' [[[{{ "quoted \\" [" \\\\'
    path = tmp_path / "escaped.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    assert [d.probes[0].question for d in load_longmemeval(path)] == [q["question"] for q in raw]


@pytest.mark.parametrize("depth", [MAX_DEPTH, MAX_DEPTH + 1])
def test_the_limit_is_exact(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "nested.json"
    path.write_text("[" * depth + "]" * depth)
    if depth > MAX_DEPTH:
        with pytest.raises(DatasetError, match="nested too deeply"):
            list(load_longmemeval(path))
    else:  # as deep as allowed: read, then refused for what it holds (not questions)
        with pytest.raises(DatasetError, match=r"\[0\]: expected"):
            list(load_longmemeval(path))
