"""Channel A: the skip layers, the rule-based extractor behind the offline model, saving and dedup."""

from __future__ import annotations

import json

import pytest

from memlab.llm import ExtractiveChatModel, RecordedChatModel
from memlab.llm.base import Completion
from memlab.llm.extract_rules import extract_memories
from memlab.llm.prompts import TranscriptLine, parse_transcript, transcript_of
from memlab.longterm import SKIP_LAYERS, MemoryType, ServiceRules, should_skip_extraction
from memlab.longterm.extraction import extraction_prompt, parse_memories
from memlab.longterm.model import SOURCE_AGENT_TOOL, SOURCE_AUTO_EXTRACT
from memlab.messages import Message, ToolCall
from memlab.trace import LLM_CALL, LONGTERM_EXTRACT, LONGTERM_SKIP, recording

from .support import context


def msg(text: str, role: str = "user", id: str = "D1:1", speaker: str = "Ann") -> Message:
    return Message(role=role, content=text, id=id, speaker=speaker)


@pytest.mark.parametrize(
    ("message", "layer"),
    [
        (Message(role="tool", content='{"status": "ok"}', tool_call_id="c1"), "tool_output"),
        (Message(role="assistant", tool_calls=(ToolCall("c1", "search"),)), "tool_output"),
        (msg("ok!"), "too_short"),
        (msg("Hey! Good to see you, how are you doing?"), "small_talk"),
        (msg("谢谢，再见！好的好的"), "small_talk"),
        (msg("The weather in the valley is rainy again today."), "not_personal"),
        (msg("I started learning the cello last month."), None),
        (msg("From now on, please write examples in Go instead."), None),  # a standing request to the listener
        (msg("我上个月开始学大提琴了"), None),
    ],
)
def test_each_skip_layer(message: Message, layer: str | None) -> None:
    assert should_skip_extraction(message) == layer


def test_a_repeat_of_the_last_turns_is_skipped() -> None:
    recent = [msg("I started learning the cello last month.")]
    assert should_skip_extraction(msg("I started learning the Cello last month!"), recent) == "repeat"


def test_rules_type_each_memory_and_keep_its_evidence() -> None:
    lines = [
        TranscriptLine("D1:1", "Ann", "I'm a nurse at the city hospital."),
        TranscriptLine("D1:2", "Bob", "I really love hiking in the mountains."),
        TranscriptLine("D1:3", "Ann", "We went to Paris last summer with my sister."),
        TranscriptLine("D1:4", "Bob", "I fixed the sink leak by replacing the washer."),
        TranscriptLine("D1:5", "Ann", "Did you go to the concert?"),
        TranscriptLine("D1:6", "Bob", "Yes, with my brother."),
        TranscriptLine("D1:7", "Ann", "Cool!"),
    ]
    out = extract_memories(lines)
    assert [(m["type"], m["evidence"]) for m in out] == [
        ("FACT", ["D1:1"]),
        ("PREFERENCE", ["D1:2"]),
        ("EPISODE", ["D1:3"]),
        ("PROCEDURE", ["D1:4"]),
        ("FACT", ["D1:5"]),
        ("FACT", ["D1:5", "D1:6"]),  # a short reply is read with the question it answers
    ]
    assert out[0]["content"] == "Ann: I'm a nurse at the city hospital."
    assert out[5]["content"] == "Ann: Did you go to the concert? Bob: Yes, with my brother."


def test_the_extractive_model_answers_the_extraction_prompt_with_the_rules() -> None:
    turns = [
        msg("I moved to Oslo in 2021.", id="D2:1"),
        msg("I love skiing there.", role="assistant", id="D2:2", speaker="Bo"),
    ]
    prompt = extraction_prompt(turns)
    completion = ExtractiveChatModel().complete(prompt, task="extract_memories")
    assert json.loads(completion.text) == extract_memories(parse_transcript(transcript_of(prompt)))
    drafts = parse_memories(completion.text, ["D2:1", "D2:2"])
    assert [(d.type, d.evidence) for d in drafts] == [
        (MemoryType.EPISODE, ("D2:1",)),
        (MemoryType.PREFERENCE, ("D2:2",)),
    ]


def test_parse_keeps_evidence_to_the_turns_shown_and_rejects_non_json() -> None:
    items = '{"type": "fact", "content": " Ann  is a nurse ", "evidence": ["D9:9"]}, {"type": "MOOD", "content": "x"}'
    answer = f'```json\n[{items}, {{"content": ""}}]\n```'
    [draft] = parse_memories(answer, ["D1:1", "D1:2"])
    assert (draft.type, draft.content, draft.evidence) == (MemoryType.FACT, "Ann is a nurse", ("D1:1", "D1:2"))
    from memlab.llm import LLMError

    with pytest.raises(LLMError):
        parse_memories("I could not find anything.", ["D1:1"])


def test_extract_and_save_counts_skips_and_calls_the_model_only_when_needed(make_service) -> None:
    service = make_service()
    ctx = context()
    with recording() as events:
        assert service.extract_and_save(ctx, [msg("Hi there!"), msg("thanks, bye", id="D1:2")]) == []
    assert [e.kind for e in events] == [LONGTERM_SKIP, LONGTERM_SKIP]  # no model call for small talk
    with recording() as events:
        saved = service.extract_and_save(
            ctx, [msg("Hello!", id="D1:3"), msg("I adopted a cat named Miso last week.", id="D1:4")]
        )
    kinds = [e.kind for e in events]
    assert kinds.count(LLM_CALL) == 1 and kinds.count(LONGTERM_SKIP) == 1
    [extract] = [e for e in events if e.kind == LONGTERM_EXTRACT]
    assert extract.data["memories"] == 1 and extract.data["latency_us"] >= 0
    [memory] = saved
    assert (memory.type, memory.source, memory.evidence) == (MemoryType.EPISODE, SOURCE_AUTO_EXTRACT, ("D1:4",))
    assert memory.value() == {
        "content": "Ann: I adopted a cat named Miso last week.",
        "agentId": "chat",
        "source": "auto_extract",
        "type": "EPISODE",
        "evidence": ["D1:4"],
        "created_at": ctx.now.isoformat(),
        "context": "Hello!",  # the turn before it, indexed with it
    }
    assert sum(service.counts[f"skip.{layer}"] for layer in SKIP_LAYERS) == 3


def test_auto_extract_keeps_duplicates_unless_told_and_counts_them_either_way(make_service) -> None:
    turn = [msg("I adopted a cat named Miso last week.", id="D1:4")]
    plain = make_service()
    plain.extract_and_save(context(), turn)
    again = [msg("I adopted a cat named Miso last week. She is tiny.", id="D3:1")]  # contains the first
    plain.extract_and_save(context(), again)
    assert len(plain.memories(context())) == 2  # the design: every extraction is a new entry
    assert plain.counts["duplicates.auto_extract"] == 1
    dedup = make_service(rules=ServiceRules(dedup_auto_extract=True))
    dedup.extract_and_save(context(), turn)
    dedup.extract_and_save(context(), again)
    assert len(dedup.memories(context())) == 1 and dedup.counts["duplicates.auto_extract"] == 1


def test_tool_saves_are_deduplicated_by_substring(make_service) -> None:
    service = make_service()
    first = service.save(context(), "Ann is allergic to peanuts", source=SOURCE_AGENT_TOOL)
    again = service.save(context(), "ann is allergic to peanuts!", source=SOURCE_AGENT_TOOL)
    longer = service.save(context(), "Ann is allergic to peanuts and carries an EpiPen", source=SOURCE_AGENT_TOOL)
    assert first.saved and not again.saved and again.duplicate and again.memory.id == first.memory.id
    assert not longer.saved and longer.duplicate  # contains a stored memory: a substring match
    assert [m.content for m in service.memories(context())] == ["Ann is allergic to peanuts"]
    assert service.counts["duplicates.agent_tool"] == 2


class _Garbage(RecordedChatModel):
    """A model that answers in prose: extraction must survive it."""

    name = "garbage"

    def _complete(self, messages, *, task, max_tokens, **params) -> Completion:
        return Completion("Sure! Here are the memories you asked for.", 10, 10, self.name)


def test_an_unusable_model_answer_is_counted_not_raised(make_service) -> None:
    service = make_service()
    service.llm = _Garbage()
    with recording() as events:
        assert service.extract_and_save(context(), [msg("I adopted a cat named Miso last week.")]) == []
    [extract] = [e for e in events if e.kind == LONGTERM_EXTRACT]
    assert extract.data["failed"] and extract.data["error"] == "LLMError"
    assert service.counts["extract.failed"] == 1


class _Scripted(RecordedChatModel):
    """A model that answers extraction with a fixed JSON text."""

    name = "scripted"

    def __init__(self, answer: str) -> None:
        super().__init__()
        self.answer = answer

    def _complete(self, messages, *, task, max_tokens, **params) -> Completion:
        return Completion(self.answer, 10, 10, self.name)


def test_extracted_content_that_save_would_refuse_is_dropped_not_raised(make_service) -> None:
    """A lone surrogate (valid JSON, no UTF-8) would crash the id's hash; "..." says nothing: both are dropped."""
    answer = (
        '[{"content": "I use \\ud83d vim"}, {"content": "..."}, {"content": "Ann: ;)"}, {"content": "Ann uses vim"}]'
    )
    service = make_service()
    service.llm = _Scripted(answer)
    with recording() as events:
        saved = service.extract_and_save(context(), [msg("I use vim for everything at work.")])
    assert [m.content for m in saved] == ["Ann uses vim"]
    [extract] = [e for e in events if e.kind == LONGTERM_EXTRACT]
    assert not extract.data["failed"] and extract.data["memories"] == 1
    assert [m.content for m in service.memories(context())] == ["Ann uses vim"]
