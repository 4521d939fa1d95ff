"""The agent runtime: history, the ordered request pipeline, components and the security context."""

from memlab.config import NoneConfig
from memlab.runtime.agent import (
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

SCHEMAS = {(group, "none"): NoneConfig for group in ("memory", "longterm")}  # context's none: memlab.context

__all__ = [
    "ORDER_CONTEXT_EDITING",
    "ORDER_LONGTERM_INJECT",
    "ORDER_SUMMARIZATION_HOOK",
    "SCHEMAS",
    "CallContext",
    "Component",
    "History",
    "RequestStage",
    "Runtime",
    "SecurityContext",
]
