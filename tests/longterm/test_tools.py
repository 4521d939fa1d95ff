"""Channel B: the memory tools' schemas, their calls, and refusals of forged or malformed arguments."""

from __future__ import annotations

import json

from memlab.longterm import MEMORY_SAVE, MEMORY_SEARCH, MemoryToolProvider
from memlab.longterm.model import SOURCE_AGENT_TOOL, SOURCE_AUTO_EXTRACT
from memlab.messages import ToolCall

from .support import context


def test_schemas_are_openai_function_tools(make_service) -> None:
    tools = MemoryToolProvider(make_service())
    schemas = tools.schemas("chat")
    assert [s["function"]["name"] for s in schemas] == [MEMORY_SAVE, MEMORY_SEARCH]
    for s in schemas:
        assert s["type"] == "function"
        params = s["function"]["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert set(params["required"]) <= set(params["properties"])
        assert not any(k.lower().lstrip("_") in ("userid", "namespace") for k in params["properties"])
    json.dumps(schemas)  # plain JSON, ready for a provider's `tools=`
    off = MemoryToolProvider(make_service(agents={"quiet": {"memory_tools": False}}))
    assert off.schemas("quiet") == []
    assert "error" in off.call(context(agent="quiet"), MEMORY_SAVE, {"content": "x y z"})


def test_save_then_search_through_tool_calls(make_service) -> None:
    service = make_service()
    tools = MemoryToolProvider(service)
    ctx = context()
    reply = tools.execute(
        ctx, ToolCall("c1", MEMORY_SAVE, json.dumps({"content": "Ann is allergic to peanuts", "type": "FACT"}))
    )
    assert reply.role == "tool" and reply.tool_call_id == "c1"
    assert json.loads(reply.text)["saved"] is True
    again = tools.call(ctx, MEMORY_SAVE, {"content": "ann is allergic to peanuts"})
    assert again["saved"] is False and again["duplicate"] is True
    [stored] = service.memories(ctx)
    assert stored.source == SOURCE_AGENT_TOOL and stored.agent_id == "chat"
    found = tools.call(ctx, MEMORY_SEARCH, json.dumps({"query": "peanut allergy", "limit": 3}))
    assert [r["content"] for r in found["results"]] == ["Ann is allergic to peanuts"]
    assert tools.call(context(user="someone else"), MEMORY_SEARCH, {"query": "peanuts"})["results"] == []


def test_forged_and_malformed_calls_are_refused_and_change_nothing(make_service) -> None:
    service = make_service()
    tools = MemoryToolProvider(service)
    victim = context(user="victim")
    service.save(victim, "the victim's secret is 1234")
    attacker = context(user="attacker")
    refused = [
        (MEMORY_SAVE, {"content": "planted", "_userId": "victim"}),
        (MEMORY_SAVE, {"content": "planted", "_namespace": '["agent:chat","user:victim","memories"]'}),
        (MEMORY_SEARCH, {"query": "secret", "user_id": "victim"}),
        (MEMORY_SEARCH, {"query": "secret", "namespace": "chat"}),
        (MEMORY_SEARCH, {"query": "secret", "agentId": "support"}),
        (MEMORY_SEARCH, {"query": "secret", "filter": {"user": "victim"}}),  # not in the schema
        (MEMORY_SAVE, {"content": ""}),
        (MEMORY_SAVE, {"content": "x", "type": "SECRET"}),
        (MEMORY_SEARCH, {"query": "secret", "limit": 10_000}),
        (MEMORY_SEARCH, "not json"),
        (MEMORY_SEARCH, "[1, 2]"),
        ("memory_delete", {"id": "anything"}),
    ]
    for name, args in refused:
        result = tools.call(attacker, name, args)
        assert set(result) == {"error"}, (name, args)
    assert service.counts["tools.rejected"] == len(refused)
    assert service.memories(attacker) == []
    assert [m.content for m in service.memories(victim)] == ["the victim's secret is 1234"]


def test_a_lone_surrogate_in_the_arguments_is_a_tool_error(make_service) -> None:
    """The defect: JSON's "\\ud83d" decodes to a lone surrogate, which no store takes: memory_save raised
    UnicodeEncodeError out of the call, after using a sequence number."""
    service, fresh = make_service(), make_service()
    tools = MemoryToolProvider(service)
    for name, args in [
        (MEMORY_SAVE, '{"content": "I use \\ud83d vim"}'),
        (MEMORY_SAVE, {"content": "I use \udc00 vim"}),
        (MEMORY_SEARCH, '{"query": "which \\ud83d editor"}'),
    ]:
        assert "not valid text (surrogates not allowed" in tools.call(context(), name, args)["error"]
    assert service.memories(context()) == [] and service.counts["tools.rejected"] == 3
    saved = tools.call(context(), MEMORY_SAVE, {"content": "I use vim"})
    assert saved["id"] == MemoryToolProvider(fresh).call(context(), MEMORY_SAVE, {"content": "I use vim"})["id"]


def test_a_save_with_no_words_is_a_tool_error(make_service) -> None:
    """The defect: "\\u200b" or "..." was stored, each repeat again (the duplicate check compares words)."""
    service = make_service()
    tools = MemoryToolProvider(service)
    for content in ["\u200b", "...", "\x00", "Ann: ;)", "..."]:
        assert tools.call(context(), MEMORY_SAVE, {"content": content})["error"] == "memory_save: content has no words"
    assert service.memories(context()) == []
    assert tools.call(context(), MEMORY_SAVE, {"content": "Ann: I use vim"})["saved"]


def test_a_scope_too_long_for_the_store_is_a_tool_error(make_service) -> None:
    """The defect: a user id that pushed the namespace past 255 characters made memory_save raise."""
    service = make_service()
    tools = MemoryToolProvider(service)
    ctx = context(user="u" * 240)
    for name, args in ((MEMORY_SAVE, {"content": "likes tea"}), (MEMORY_SEARCH, {"query": "tea"})):
        result = tools.call(ctx, name, args)
        assert set(result) == {"error"} and "255 characters" in result["error"], result
    assert service.counts["tools.rejected"] == 2


def test_a_tool_save_and_the_turn_it_came_from_take_one_place_in_the_results(make_service) -> None:
    """The tool channel saves a sentence during the call, auto-extraction the whole turn after it
    (without dedup, as the document says): search returns the turn once, in the better rank."""
    service = make_service(index="hybrid")
    ctx = context()
    turn = "Ann: Thanks, Bo. I adopted a grey cat named Luna last spring. Work is busy."
    service.save(ctx, "Ann: I adopted a grey cat named Luna last spring.", source=SOURCE_AGENT_TOOL, evidence=["D1:3"])
    service.save(ctx, turn, source=SOURCE_AUTO_EXTRACT, evidence=["D1:3"])
    service.save(ctx, "Ann: My cat Luna hates the rain.", source=SOURCE_AUTO_EXTRACT, evidence=["D2:1"])
    hits = service.search(ctx, "What is the name of Ann's cat?", 3)
    assert len(service.memories(ctx)) == 3
    assert sorted(h.memory.content for h in hits) == sorted([turn, "Ann: My cat Luna hates the rain."])
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # Memories of different turns never stand in for each other, whatever their words.
    service.save(ctx, "Ann: I adopted a grey cat named Luna.", evidence=["D3:9"], dedup=False)
    assert len(service.search(ctx, "What is the name of Ann's cat?", 5)) == 3
