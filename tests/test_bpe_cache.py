"""tiktoken's parsed rank tables cached on disk (memlab.bpe_cache): the same tables, keyed by content, never trusted
when damaged."""

from __future__ import annotations

import base64
import hashlib
import os
import pickle
from pathlib import Path

import pytest
import tiktoken
import tiktoken.load
from tiktoken_ext import openai_public  # before `parses` counts tiktoken's parser: the uncached reference

from memlab import bpe_cache
from memlab.tokens import _offline_tiktoken, load_encoding


@pytest.fixture(autouse=True)
def _cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(bpe_cache.CACHE_ENV)  # the session's folder (tests/conftest.py): these tests use their own
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken's own cache would keep a changed file's old bytes


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files tiktoken's own parser reads (each a cache miss)."""
    seen: list[str] = []
    parse = tiktoken.load.load_tiktoken_bpe

    def counted(path: str, expected_hash: str | None = None) -> dict[bytes, int]:
        seen.append(path)
        return parse(path, expected_hash)

    monkeypatch.setattr(tiktoken.load, "load_tiktoken_bpe", counted)
    return seen


def _bpe_file(path: Path, tokens: list[bytes]) -> str:
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % rank for rank, t in enumerate(tokens)))
    return str(path)


def _entries() -> list[Path]:
    folder = Path(os.environ["XDG_CACHE_HOME"]) / "memlab" / "tiktoken"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def test_a_table_is_parsed_once_then_read_from_the_cache(tmp_path: Path, parses: list[str]) -> None:
    path = _bpe_file(tmp_path / "a.tiktoken", [b"a", b"b", b"ab", b"\xff\x00"])
    first = bpe_cache.load_ranks(path)
    assert first == {b"a": 0, b"b": 1, b"ab": 2, b"\xff\x00": 3}
    assert bpe_cache.load_ranks(path) == first
    assert parses == [path]  # the second load read the cache
    assert [p.name for p in _entries()] == [bpe_cache.entry_path(Path(path).read_bytes()).name]  # no temporary left


def test_the_cache_is_keyed_by_the_files_bytes(tmp_path: Path, parses: list[str]) -> None:
    """A file that changed under the same name is parsed again; the same bytes elsewhere share the entry."""
    path = tmp_path / "a.tiktoken"
    assert bpe_cache.load_ranks(_bpe_file(path, [b"a", b"b"])) == {b"a": 0, b"b": 1}
    assert bpe_cache.load_ranks(_bpe_file(path, [b"b", b"a"])) == {b"b": 0, b"a": 1}
    assert bpe_cache.load_ranks(_bpe_file(tmp_path / "copy.tiktoken", [b"b", b"a"])) == {b"b": 0, b"a": 1}
    assert len(parses) == 2 and len(_entries()) == 2


def _damaged(entry: bytes) -> dict[str, bytes]:
    payload = entry[len(bpe_cache.MAGIC) + 32 :]
    flipped = bytearray(entry)
    flipped[-3] ^= 0x01
    evil = pickle.dumps({b"x": os.getcwd})  # a table that names a function: refused, not returned
    return {
        "truncated": entry[:-10],
        "a flipped byte": bytes(flipped),
        "empty": b"",
        "another layout": b"memlab-bpe-ranks-v0\n" + entry[len(bpe_cache.MAGIC) :],
        "a bare pickle": payload,
        "a global, right digest": bpe_cache.MAGIC + hashlib.sha256(evil).digest() + evil,
    }


@pytest.mark.parametrize(
    "damage", ["truncated", "a flipped byte", "empty", "another layout", "a bare pickle", "a global, right digest"]
)
def test_a_damaged_entry_is_ignored_and_written_again(tmp_path: Path, parses: list[str], damage: str) -> None:
    path = _bpe_file(tmp_path / "a.tiktoken", [b"x", b"y", b"xy"])
    ranks = bpe_cache.load_ranks(path)
    (entry,) = _entries()
    entry.write_bytes(_damaged(entry.read_bytes())[damage])
    assert bpe_cache.read_entry(entry) is None
    assert bpe_cache.load_ranks(path) == ranks
    assert len(parses) == 2  # parsed again, not read from the damaged entry
    assert bpe_cache.read_entry(entry) == ranks  # and cached whole again


def test_an_unwritable_cache_still_loads(tmp_path: Path, parses: list[str]) -> None:
    (tmp_path / "cache").write_text("a file where the cache folder would be")
    path = _bpe_file(tmp_path / "a.tiktoken", [b"x", b"y"])
    assert bpe_cache.load_ranks(path) == bpe_cache.load_ranks(path) == {b"x": 0, b"y": 1}
    assert len(parses) == 2


def test_the_folder_follows_memlab_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parses: list[str]) -> None:
    """$MEMLAB_CACHE, when set, holds the tables (in tiktoken/, beside the response caches) instead of memlab's user
    cache."""
    monkeypatch.setenv("MEMLAB_CACHE", str(tmp_path / "elsewhere"))
    path = _bpe_file(tmp_path / "a.tiktoken", [b"x", b"y"])
    assert bpe_cache.load_ranks(path) == bpe_cache.load_ranks(path) == {b"x": 0, b"y": 1}
    assert len(parses) == 1 and not _entries()
    assert [p.parent for p in (tmp_path / "elsewhere" / "tiktoken").iterdir()] == [tmp_path / "elsewhere" / "tiktoken"]


def test_expected_hash_is_still_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tiktoken checks a file's sha256 as it copies it into its cache (as with the bundled files); so does memlab."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken"))
    path = _bpe_file(tmp_path / "a.tiktoken", [b"x", b"y"])
    bpe_cache.load_ranks(path)
    with pytest.raises(ValueError, match="Hash mismatch"):
        bpe_cache.load_ranks(path, expected_hash="0" * 64)


def test_o200k_from_the_cache_is_tiktokens_own(parses: list[str]) -> None:
    """The cached o200k_base table equals tiktoken's parse, and an encoding built on it encodes alike."""
    original = openai_public.load_tiktoken_bpe
    with _offline_tiktoken():
        plain = openai_public.o200k_base()
        with bpe_cache.cached_openai_encodings():
            assert openai_public.load_tiktoken_bpe is bpe_cache.load_ranks
            first = openai_public.o200k_base()
            cached = openai_public.o200k_base()
    assert openai_public.load_tiktoken_bpe is original  # restored
    assert len(parses) == 1  # the cached run's first load; its second read the entry
    assert plain == first == cached
    text = "Caroline went to the LGBTQ support group on 7 May 2023 / ünïcödé 🙂\n\n  tabs\t"
    assert load_encoding("o200k_base").encode(text) == tiktoken.Encoding(**cached).encode(text)
