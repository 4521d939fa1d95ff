"""`longterm.revision.kind=llm`: the run's LLM decides which older memory a new one updates, over real HTTP."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from hydra.utils import instantiate

from memlab.longterm import MemoryType, RevisionRule
from memlab.longterm.llm_updates import PROMPT, parse
from memlab.longterm.model import SOURCE_AUTO_EXTRACT
from memlab.longterm.rerank import Decay, Dedup, Revisions

from .support import T0, context


def _reply(text: str) -> tuple[int, dict, dict]:
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    usage = {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52}
    body = {"id": "c1", "object": "chat.completion", "created": 0, "model": "test-model", "choices": [choice]}
    body["usage"] = usage
    return 200, body, {}


def _save(service, text: str, days: int, turn: str):
    ctx = context(now=T0 + timedelta(days=days))
    return service.save(ctx, text, MemoryType.FACT, source=SOURCE_AUTO_EXTRACT, evidence=(turn,)).memory


@pytest.fixture
def litellm_service(make_service, make_config, openai_server_module, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-test")
    with openai_server_module.serve() as server:
        cfg = make_config(
            "llm=litellm", "llm.model=openai/test-model", f"llm.api_base={server.base_url}",
            "llm.api_key_env=MEMLAB_TEST_KEY", f"llm.cache_dir={tmp_path / 'cache'}", "llm.num_retries=0",
        )  # fmt: skip
        service = make_service(index="hybrid", revision=RevisionRule(kind="llm"))
        service.llm = instantiate(cfg.llm)
        service.rerank = [Decay(), Revisions(), Dedup()]  # the links alone, no search-time update rule
        yield service, server
        assert server.rejected == []


def test_the_model_decides_the_update_and_search_reads_it_first(litellm_service) -> None:
    service, server = litellm_service
    old = _save(service, "Priya: I stayed put in my Bristol flat down by the harbour.", 0, "D1:3")
    _save(service, "Tom: My Bristol trip was lovely.", 1, "D1:4")  # another speaker: never shown for Priya
    assert server.bodies("/v1/chat/completions") == []  # nothing older of Priya's to decide about
    server.replies.append(_reply('{"memory": [{"id": "0", "event": "UPDATE"}]}'))
    new = _save(service, "Priya: Finally signed the lease on the place in Leeds.", 40, "D6:1")
    (body,) = server.bodies("/v1/chat/completions")
    assert body["messages"][0]["content"] == PROMPT
    sent = json.loads(body["messages"][1]["content"])
    assert sent == {"new_memory": new.content, "existing": [{"id": "0", "text": old.content}]}
    assert new.revises == (old.id,)
    ranked = [h.memory.id for h in service.search(context(now=T0 + timedelta(days=50)), "Where is Priya's flat?", 2)]
    assert ranked == [new.id, old.id]  # "flat" is in the older memory only: its reviser goes just above it


def test_none_and_an_unreadable_reply_link_nothing(litellm_service) -> None:
    service, server = litellm_service
    _save(service, "Zoe: My Forester has a rattle.", 0, "D1:1")
    server.replies.append(_reply('{"memory": [{"id": "0", "event": "NONE"}]}'))
    assert _save(service, "Zoe: The Forester's in the garage again, same rattle.", 30, "D4:8").revises == ()
    server.replies.append(_reply("I think the second one updates the first."))
    assert _save(service, "Zoe: Rattle is still there.", 31, "D4:9").revises == ()
    assert service.counts["revisions.llm_unreadable"] == 1
    assert len(server.bodies("/v1/chat/completions")) == 2


@pytest.mark.parametrize(
    ("text", "linked"),
    [
        ('{"memory": [{"id": "1", "event": "DELETE"}, {"id": "0", "event": "NONE"}]}', ("b",)),
        ('```json\n{"memory": [{"id": "0", "event": "update"}]}\n```', ("a",)),
        ('{"memory": [{"id": "7", "event": "UPDATE"}]}', ()),  # an id it was not shown
        ('{"memory": [{"id": "0", "event": "MERGE"}]}', None),
        ("no json", None),
    ],
)
def test_parse(text: str, linked) -> None:
    class Shown:
        def __init__(self, id: str) -> None:
            self.id = id

    assert parse(text, [Shown("a"), Shown("b")]) == linked  # type: ignore[list-item]
