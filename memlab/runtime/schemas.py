"""Structured configs of the runtime's group entries: the no-op component and the model's tool policy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class NoneConfig:
    """The "none" entry of a component group: a plain no-op `Component`."""

    _target_: str = "memlab.runtime.Component"


@dataclass
class ModelPolicyConfig:
    """`policy=model`: the llm decides through its provider's tool calling."""

    _target_: str = "memlab.runtime.ModelToolPolicy"
    llm: Any = "${llm}"
    """The model that decides through its provider's tool calling."""


SCHEMAS: dict[tuple[str, str], type] = {
    ("memory", "none"): NoneConfig,
    ("longterm", "none"): NoneConfig,
    ("policy", "model"): ModelPolicyConfig,
}
