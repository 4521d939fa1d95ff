"""A corpus extended line by line is the corpus built from scratch, and a changed line is never reused."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.llm import corpus as corpus_module
from memlab.llm.corpus import Corpus, corpus


def _fields(c: Corpus) -> dict[str, object]:
    return {
        f.name: (v.tolist(), v.dtype.str) if isinstance(v, np.ndarray) else v
        for f in dataclasses.fields(c)
        if f.name != "analyses"
        for v in [getattr(c, f.name)]
    }


def _fresh(transcript: str) -> Corpus:
    corpus_module._RECENT.clear()
    return corpus(transcript)


_LINE = st.one_of(
    st.builds(
        "[D1:{}] {}: {}".format,
        st.integers(0, 9),
        st.sampled_from(["Ann", "Bob", "Dr. Li"]),
        st.sampled_from(["Hi Bob!", "I moved to Oslo in 2021. Kari came too.", "我喜欢咖啡。好的", "Thanks! ", "ok"]),
    ),
    st.sampled_from(["", "not a transcript line", " ", "[x] broken"]),
)


@settings(max_examples=100)
@given(lines=st.lists(_LINE, min_size=1, max_size=12))
def test_growing_transcripts_reuse_the_previous_corpus_exactly(lines: list[str]) -> None:
    corpus_module._RECENT.clear()
    grown = [corpus("\n".join(lines[:k])) for k in range(1, len(lines) + 1)]
    for k, c in enumerate(grown, start=1):
        assert _fields(c) == _fields(_fresh("\n".join(lines[:k])))


def test_a_longer_last_line_is_not_an_extension() -> None:
    corpus_module._RECENT.clear()
    corpus("[1] Ann: Hi Bob.")
    longer = corpus("[1] Ann: Hi Bob. I moved to Oslo.")
    assert [s.text for s in longer.sentences] == ["Hi Bob.", "I moved to Oslo."]
    assert _fields(longer) == _fields(_fresh("[1] Ann: Hi Bob. I moved to Oslo."))


def test_a_grown_transcript_is_compared_with_its_longest_base_only(monkeypatch) -> None:
    """Each comparison reads up to the whole transcript (50,000 characters in a replay): the longest recent
    corpus is tried first, and it is the one extended."""
    corpus_module._RECENT.clear()
    lines = [f"[D1:{k}] {'Ann' if k % 2 else 'Bob'}: Line {k} says something new." for k in range(20)]
    for k in range(1, len(lines)):
        corpus("\n".join(lines[:k]))
    compared: list[str] = []
    extends = corpus_module._extends
    monkeypatch.setattr(corpus_module, "_extends", lambda t, base: compared.append(base) or extends(t, base))
    grown = corpus("\n".join(lines))
    assert compared == ["\n".join(lines[:-1])]
    assert _fields(grown) == _fields(_fresh("\n".join(lines)))
