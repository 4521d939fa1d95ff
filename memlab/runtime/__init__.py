"""The agent runtime: history, the ordered request pipeline, components and the security context."""

from dataclasses import dataclass
from typing import Any

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
    tool_schema_tokens,
)


@dataclass
class NoneConfig:
    """The "none" entry of a component group: a plain no-op `Component`."""

    _target_: str = "memlab.runtime.Component"


@dataclass
class ModelPolicyConfig:
    """`policy=model`: the llm decides through its provider's tool calling."""

    _target_: str = "memlab.runtime.ModelToolPolicy"
    llm: Any = "${llm}"


SCHEMAS: dict[tuple[str, str], type] = {
    (group, "none"): NoneConfig for group in ("memory", "longterm")
}  # context none: memlab.context
SCHEMAS[("policy", "model")] = ModelPolicyConfig

__all__ = [
    "DEFAULT_MAX_TOOL_ROUNDS",
    "ORDER_CONTEXT_EDITING",
    "ORDER_LONGTERM_INJECT",
    "ORDER_SUMMARIZATION_HOOK",
    "SCHEMAS",
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
    "tool_schema_tokens",
]
