"""Namespaces: random saves and searches by many users and agents, with forged scope arguments."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlab.longterm import MEMORY_SAVE, MEMORY_SEARCH, MemoryToolProvider, namespace_of
from memlab.longterm.tools import is_forged

from .support import context

USERS = ["42", "43", "u1", "user:42", '42","user:43', "../43", "Ⅻ", ""]
AGENTS = {"chat": "chat", "support": "support", "default": "default"}  # agent id -> its namespace
FORGED_KEYS = [
    "_userId",
    "_namespace",
    "user_id",
    "userId",
    "namespace",
    "agent_id",
    "agentId",
    "_agentId",
    "USER-ID",
    "Namespace",
    "user",
]
WORDS = ["coffee", "tea", "berlin", "oslo", "piano", "marathon", "python", "java", "dog", "cat"]

ops = st.lists(
    st.tuples(
        st.sampled_from(["save", "search", "service_search"]),
        st.sampled_from(USERS),
        st.sampled_from(sorted(AGENTS)),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
        st.dictionaries(
            st.sampled_from(FORGED_KEYS),
            st.sampled_from([*USERS, "agent:chat", '["agent:chat","user:43","memories"]']),
            max_size=2,
        ),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops)
def test_no_result_ever_crosses_a_namespace(make_service, sequence) -> None:
    service = make_service()
    tools = MemoryToolProvider(service)
    owner: dict[str, tuple[str, ...]] = {}  # content -> the namespace that saved it
    for n, (op, user, agent, words, forged) in enumerate(sequence):
        ctx = context(user=user, agent=agent)
        mine = namespace_of(AGENTS[agent], user)
        if op == "save":
            content = f"note {n} about {' '.join(words)} from {user!r}"
            args = {"content": content, "type": "FACT", **forged}
            result = tools.call(ctx, MEMORY_SAVE, json.dumps(args))
            if forged:
                assert "error" in result  # a call that names a scope of its own is refused outright
            else:
                assert result["saved"] or result["duplicate"]
                owner.setdefault(content, mine)
        elif op == "search":
            result = tools.call(ctx, MEMORY_SEARCH, {"query": " ".join(words), "limit": 20, **forged})
            if forged:
                assert "error" in result
                continue
            assert all(owner[r["content"]] == mine for r in result["results"])
        else:
            hits = service.search(ctx, " ".join(words), 20)
            assert all(h.memory.namespace == mine and owner[h.memory.content] == mine for h in hits)
    # And the store agrees: every row sits in the namespace of whoever saved it.
    for content, ns in owner.items():
        user = ns[1].removeprefix("user:")
        agent = next(a for a, space in AGENTS.items() if ns[0] == f"agent:{space}")
        assert content in {m.content for m in service.memories(context(user=user, agent=agent))}


def test_forged_names_are_recognized_in_any_spelling() -> None:
    for key in [*FORGED_KEYS, "_user_id", "tenantId", "securityContext"]:
        assert is_forged(key), key
    for key in ("content", "type", "query", "limit"):
        assert not is_forged(key)
