"""The agent runtime: history, the ordered request pipeline, components and the security context."""

from memlab.runtime.agent import (
    DEFAULT_MAX_TOOL_ROUNDS,
    ORDER_CONTEXT_EDITING,
    ORDER_LONGTERM_INJECT,
    ORDER_SUMMARIZATION_HOOK,
    CallContext,
    Component,
    History,
    RequestStage,
    Runtime,
    SecurityContext,
)
from memlab.runtime.react import (
    ModelCall,
    ModelToolPolicy,
    ToolPolicy,
    execute_react_iteration,
    finish_iteration,
)

__all__ = [
    "DEFAULT_MAX_TOOL_ROUNDS",
    "ORDER_CONTEXT_EDITING",
    "ORDER_LONGTERM_INJECT",
    "ORDER_SUMMARIZATION_HOOK",
    "CallContext",
    "Component",
    "History",
    "ModelCall",
    "ModelToolPolicy",
    "RequestStage",
    "Runtime",
    "SecurityContext",
    "ToolPolicy",
    "execute_react_iteration",
    "finish_iteration",
]
