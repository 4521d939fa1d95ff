"""`MemoryToolProvider`: ``memory_save`` and ``memory_search`` as OpenAI function tools (channel B).

The model sees only what a memory is about (content, type, a query, a limit). Who it serves
comes from the runtime's `SecurityContext` (the document's `_userId` / `_namespace`, injected
by the framework): an argument naming a user, an agent or a namespace, under any spelling, is
rejected before anything is read or written, and so is any argument the schema does not list.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from memlab.errors import MemlabError
from memlab.longterm.model import SOURCE_AGENT_TOOL, MemoryType
from memlab.longterm.service import LongTermMemoryService
from memlab.longterm.terms import content_problem, text_problem
from memlab.messages import Message, ToolCall, tool_result
from memlab.runtime.agent import CallContext
from memlab.trace import LONGTERM_TOOL, emit

MEMORY_SAVE = "memory_save"
MEMORY_SEARCH = "memory_search"
TOOL_NAMES = (MEMORY_SAVE, MEMORY_SEARCH)
SEARCH_MAX_LIMIT = 20
# Outcomes of a tool call, as LONGTERM_TOOL events report them.
TOOL_SAVED = "saved"
TOOL_DUPLICATE = "duplicate"  # a memory_save the substring dedup refused
TOOL_SEARCHED = "searched"
TOOL_ERROR = "error"  # refused before anything was read or written
# Argument names that would let the model choose whose memories it touches (compared without case or separators).
_FORGED = re.compile(r"^(user|userid|uid|namespace|ns|agent|agentid|tenant|tenantid|owner|scope|securitycontext)$")

_SCHEMAS: dict[str, dict[str, Any]] = {
    MEMORY_SAVE: {
        "type": "function",
        "function": {
            "name": MEMORY_SAVE,
            "description": (
                "Remember something durable about the user for future conversations: a fact, a preference, "
                "a procedure that solved a problem, or an important event. Repeats of a stored memory are ignored."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "description": "One self-contained sentence."},
                    "type": {"type": "string", "enum": [str(t) for t in MemoryType], "default": "FACT"},
                },
                "required": ["content"],
                "additionalProperties": False,
            },
        },
    },
    MEMORY_SEARCH: {
        "type": "function",
        "function": {
            "name": MEMORY_SEARCH,
            "description": "Search what you remember about the user; returns the most relevant memories.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": SEARCH_MAX_LIMIT, "default": 5},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    },
}


class ToolArgumentError(ValueError):
    """A tool call the provider refuses (unknown tool, forged scope, bad arguments)."""


def is_forged(name: str) -> bool:
    """Whether an argument name tries to choose a user, agent or namespace (``_userId``, ``user-id``...)."""
    return bool(_FORGED.match(re.sub(r"[^a-z]", "", name.lower())))


class MemoryToolProvider:
    """The memory tools of one service, scoped per call by the runtime's security context.

    Args:
        service: The service whose memories the tools save and search.
    """

    def __init__(self, service: LongTermMemoryService) -> None:
        self.service = service

    def schemas(self, agent_id: str) -> list[dict[str, Any]]:
        """The tools to offer `agent_id` (none unless its `memory_tools` setting is on)."""
        settings = self.service.settings(agent_id)
        if not (settings.enabled and settings.memory_tools):
            return []
        return [json.loads(json.dumps(s)) for s in _SCHEMAS.values()]  # callers may not mutate ours

    def call(self, ctx: CallContext, name: str, arguments: str | Mapping[str, Any]) -> dict[str, Any]:
        """Run one tool call for whoever `ctx.security` names; refusals come back as ``{"error": ...}``."""
        try:
            args = self._arguments(ctx, name, arguments)
        except ToolArgumentError as e:
            self.service.counts["tools.rejected"] += 1
            emit(LONGTERM_TOOL, tool=name, outcome=TOOL_ERROR)
            return {"error": str(e)}
        if name == MEMORY_SAVE:
            capped = self.service.counts["archived.max_items"]
            result = self.service.save(
                ctx, args["content"], args["type"], source=SOURCE_AGENT_TOOL, evidence=ctx.evidence, dedup=True
            )
            emit(
                LONGTERM_TOOL,
                tool=name,
                outcome=TOOL_SAVED if result.saved else TOOL_DUPLICATE,
                archived_by_cap=self.service.counts["archived.max_items"] - capped,
            )
            return {"saved": result.saved, "duplicate": result.duplicate, "id": result.memory.id}
        hits = self.service.search(ctx, args["query"], args["limit"])
        emit(LONGTERM_TOOL, tool=name, outcome=TOOL_SEARCHED, results=len(hits))
        return {
            "results": [
                {"type": str(h.memory.type), "content": h.memory.content, "relevance": round(h.score, 4)} for h in hits
            ]
        }

    def execute(self, ctx: CallContext, call: ToolCall) -> Message:
        """The tool message that answers `call` (for a ReAct loop's history)."""
        result = self.call(ctx, call.name, call.arguments)
        return tool_result(call, json.dumps(result, ensure_ascii=False))

    def _arguments(self, ctx: CallContext, name: str, arguments: str | Mapping[str, Any]) -> dict[str, Any]:
        settings = self.service.settings(ctx.security.agent_id)
        if name not in _SCHEMAS:
            raise ToolArgumentError(f"unknown tool {name!r}; expected {MEMORY_SAVE} or {MEMORY_SEARCH}")
        if not (settings.enabled and settings.memory_tools):
            raise ToolArgumentError(f"memory tools are off for agent {ctx.security.agent_id!r}")
        try:
            self.service.namespace(ctx)  # ids too long for the store's 255-character namespace
        except MemlabError as e:
            raise ToolArgumentError(f"{name}: {e}") from None
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except json.JSONDecodeError as e:
                raise ToolArgumentError(f"{name}: arguments are not JSON ({e.msg})") from None
        if not isinstance(arguments, Mapping):
            raise ToolArgumentError(f"{name}: arguments must be a JSON object")
        forged = sorted(k for k in arguments if is_forged(str(k)))
        if forged:
            raise ToolArgumentError(
                f"{name}: argument(s) {', '.join(forged)} refused; the user and namespace come from the runtime"
            )
        allowed = _SCHEMAS[name]["function"]["parameters"]["properties"]
        unknown = sorted(set(map(str, arguments)) - set(allowed))
        if unknown:
            raise ToolArgumentError(f"{name}: unknown argument(s) {', '.join(unknown)}; expected {', '.join(allowed)}")
        if name == MEMORY_SAVE:
            content = arguments.get("content")
            problem = content_problem(content)
            if problem is not None:
                raise ToolArgumentError(f"{name}: content {problem}")
            try:
                kind = MemoryType.parse(str(arguments.get("type", "FACT")))
            except ValueError as e:
                raise ToolArgumentError(f"{name}: {e}") from None
            return {"content": content, "type": kind}
        query, limit = _text(name, "query", arguments.get("query")), arguments.get("limit", 5)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= SEARCH_MAX_LIMIT:
            raise ToolArgumentError(f"{name}: limit must be an integer from 1 to {SEARCH_MAX_LIMIT}")
        return {"query": query, "limit": limit}


def _text(name: str, field: str, value: Any) -> str:
    """A text argument: a non-empty string that UTF-8 can encode (`text_problem`)."""
    problem = text_problem(value)
    if problem is not None:
        raise ToolArgumentError(f"{name}: {field} {problem}")
    return str(value)
