"""Structured configs: the schema of a run and the registry of every group entry's schema.

Each YAML entry in `conf/<group>/` starts with ``defaults: [/schema/<group>/<name>@_here_, _self_]``
so that Hydra validates it against the dataclass registered here: an unknown key or a value
of the wrong type fails at start, naming the key. A nested node (a context entry's `strategy`,
a memory entry's `strategy`, an agent memory's `compressor`) comes from a defaults entry of its
own group, ``- /schema/context_strategy/trim@strategy``, and is validated by that schema.
Each package keeps its config dataclasses in ``memlab/<package>/schemas.py`` with a module-level
``SCHEMAS`` mapping ``{(group, name): dataclass}``; `register()` stores them all. This module
holds the run's own schema (`RunConfig`).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import importlib
import typing
from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigNode, ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from memlab import config_source, ranges
from memlab.naming import register_resolver
from memlab.runtime.agent import DEFAULT_MAX_TOOL_ROUNDS
from memlab.sim.progress import DEFAULT_HEARTBEAT_S
from memlab.tokens import budget_counter

# ``${memlab_counter:${..counter}}``: the counter spec of a budget counted exact (the run's tokenizer) or estimate.
COUNTER_RESOLVER = "memlab_counter"

# Each package's config dataclasses, in its `schemas` module (each exports SCHEMAS).
SCHEMA_MODULES = tuple(
    f"memlab.{package}.schemas"
    for package in (
        "dialogues",
        "runtime",
        "memory",
        "stores",
        "llm",
        "embed",
        "longterm",
        "context",
        "tracking",
        "peers",
    )
)


@dataclass
class SimConfig:
    """How the simulator replays: which roles trigger a model call, whether probes build a context."""

    call_roles: list[str] = field(default_factory=lambda: ["assistant"])
    """The roles whose recorded messages are replayed as model calls."""
    probe_context: bool = True
    """Build the context each probe (question) would have been answered from."""
    max_tool_rounds: int = ranges.count(DEFAULT_MAX_TOOL_ROUNDS)
    """Tool rounds a ReAct iteration may run before the reply."""
    stop_after_session: int | None = ranges.ranged(None, ge=1)
    """Stop after this many sessions and checkpoint in `store` (memlab.sim.checkpoint)."""
    resume: bool = False
    """Carry on from the checkpoint of run `name` in `store`."""
    reuse_store: bool = False
    """Read and write the store's shared rows that earlier runs with it filled (false: a scope of the run's own)."""
    progress: bool | None = None
    """A progress bar; None: on a terminal, else (CI, nohup) a heartbeat line on stderr; false: neither."""
    heartbeat_seconds: float | None = ranges.ranged(DEFAULT_HEARTBEAT_S, ge=0.01, le=86_400)
    """Seconds between heartbeat lines (calls, sessions done, time left): run.log, stderr off a terminal; null: none."""
    max_dialogues: int | None = ranges.positive(None)
    """Replay only the first N dialogues (`debug=default` sets 1)."""
    max_sessions: int | None = ranges.positive(None)
    """Replay only the first N sessions of each dialogue, with their probes."""
    workers: int | None = ranges.ranged(None, ge=1, le=1_024)
    """Replay processes; None: the machine's cores."""


@dataclass
class PricingConfig:
    """Which model's prices (litellm's bundled table) turn tokens into `cost.usd`."""

    model: str = "gpt-4o-mini"
    """The model whose prices (and tokenizer) the run's tokens are counted and priced at."""


@dataclass
class EvalConfig:
    """Optional answer evaluation: answer each probe from its context with `llm`, then score it."""

    answers: bool = False
    """Answer every probe from its context with `llm` and score the answers."""
    judge: bool = True
    """Also have `llm` judge each answer against the reference."""
    overall_excludes: list[str] = field(default_factory=lambda: ["adversarial"])
    """Question categories left out of the overall retention and recall means (each still reported on its own)."""
    language: str = "en"
    """The answer prompt's language: en or zh."""
    max_tokens: int = ranges.positive(64)
    """The longest answer, in tokens."""


@dataclass
class ObjectiveConfig:
    """What a run returns to a sweeper (optuna): `metric`, penalized above a token `budget`."""

    metric: str = "context.evidence_retention"
    """The metric a sweeper maximizes (a key of metrics.json)."""
    budget: float | None = ranges.positive(None)
    """Tokens per call above which the metric is penalized by the share over (null: no budget)."""
    budget_metric: str = "tokens.prompt.mean"
    """The metric compared with `budget`."""


@dataclass
class SweepConfig:
    """How `memlab run -m` ends: non-zero when a job failed or never finished, unless `allow_failures`."""

    allow_failures: bool = False
    """Exit 0 from a sweep even when a job failed or never finished."""


@dataclass
class ReportConfig:
    """What a run's report.html (and a sweep's comparison.html) draws besides its tables."""

    plots: bool = True
    """Draw the report's figures (matplotlib: ~0.5 s per run); debug=default turns them off. A comparison draws
    its figures when any of its runs asks for them."""


@dataclass
class RunConfig:
    """The whole experiment: one entry per group plus run-wide settings."""

    name: str = "default"
    """The run's name: its folder under reports/runs/ and its label in comparisons."""
    tags: list[str] = field(default_factory=list)
    """Free labels kept in the manifest: tags=[baseline,gpt4o]."""
    seed: int = ranges.seed(0)
    """Seeds Python's and numpy's random streams (and the synthetic data, by default)."""
    tokenizer: str = "${pricing.model}"
    """Counts every token the run reports: the pricing model's own tokenizer (memlab.metrics.check_tokenizer)."""
    budget_counter: str = "estimate"
    """How context budgets count unless `context.counter` says: estimate (the document's) or exact (`tokenizer`)."""
    system_prompt: str | None = None
    """The agent's instructions when the dataset has none (null: none)."""
    agent_id: str = "default"
    """Which agent's long-term memory settings apply (`longterm.agents.<id>`)."""
    dataset: Any = MISSING
    """The dialogues to replay (conf/dataset)."""
    context: Any = MISSING
    """How each request is cropped (conf/context)."""
    memory: Any = MISSING
    """What is done to the stored history (conf/memory)."""
    agent_memory: Any = MISSING
    """The stored history, plain or compressed (conf/agent_memory)."""
    longterm: Any = MISSING
    """Long-term memory (conf/longterm)."""
    llm: Any = None
    """The model behind summaries, extraction and answers (conf/llm)."""
    policy: Any = None
    """Who decides tool calls when components offer tools (conf/policy)."""
    embedder: Any = None
    """The embeddings of long-term retrieval (conf/embedder)."""
    store: Any = None
    """Where histories and long-term records live (conf/store)."""
    logger: Any = None
    """Where each finished run is recorded besides its folder: a CSV file, MLflow (conf/logger)."""
    hooks: dict[str, Any] = field(default_factory=dict)
    """Extra components by name, e.g. +hooks@hooks.summarization=summarization."""
    sim: SimConfig = field(default_factory=SimConfig)
    """How the simulator replays."""
    context_window: int | None = ranges.positive(None)
    """The window `budget.violations` counts against; None: the pricing model's max input tokens."""
    pricing: PricingConfig = field(default_factory=PricingConfig)
    """How tokens are priced."""
    eval: EvalConfig = field(default_factory=EvalConfig)
    """Answer evaluation."""
    objective: ObjectiveConfig = field(default_factory=ObjectiveConfig)
    """What a sweep optimizes."""
    sweep: SweepConfig = field(default_factory=SweepConfig)
    """How a sweep ends."""
    report: ReportConfig = field(default_factory=ReportConfig)
    """What the run's report draws."""
    output_dir: str | None = None
    """Where the run directory is published; None: Hydra's run directory. Refused in a sweep (-m): one folder."""
    profile: bool = False
    """cProfile the run; its 40 costliest functions go to profile.txt."""
    verbose: bool = False
    """Third-party loggers (litellm, httpx) at INFO instead of WARNING."""
    strict: bool = False
    """A run whose every model call failed ends with an error (exit status 2), not a warning."""


def schemas() -> dict[tuple[str, str], type]:
    """Every group entry's schema, ``{(group, name): dataclass}``, from the subpackages' SCHEMAS."""
    found: dict[tuple[str, str], type] = {}
    for package in SCHEMA_MODULES:
        found.update(importlib.import_module(package).SCHEMAS)
    return found


def schema_classes() -> list[type]:
    """RunConfig, every group entry's schema, and the dataclasses their fields nest (IndexSpec, TypeSpec, ...)."""
    todo: list[Any] = [RunConfig, *schemas().values()]
    found: list[type] = []
    while todo:
        cls = todo.pop(0)
        if cls in found or not dataclasses.is_dataclass(cls) or not isinstance(cls, type):
            continue
        found.append(cls)
        for hint in typing.get_type_hints(cls).values():
            todo += [a for arg in (typing.get_args(hint) or (hint,)) for a in (typing.get_args(arg) or (arg,))]
    return found


def _counter(name: str, *, _root_: DictConfig) -> str:
    return budget_counter(name, str(_root_.tokenizer))


def register_resolvers() -> None:
    """The config's resolvers: ``memlab_name`` (folder names) and ``memlab_counter`` (budget counters)."""
    register_resolver()
    if not OmegaConf.has_resolver(COUNTER_RESOLVER):
        OmegaConf.register_new_resolver(COUNTER_RESOLVER, _counter)


# At import too: a replay worker or a joblib job resolves a config without calling `register()`.
register_resolvers()


@functools.cache
def _structured(schema: type) -> DictConfig:
    return OmegaConf.structured(schema)


class LazySchema(ConfigNode):
    """A ConfigStore entry made into a DictConfig when Hydra first loads it, not when it is stored.

    `ConfigStore.store` converts each dataclass at once (OmegaConf.structured, ~1.5 ms each); a run loads the
    few schemas its entries name, of about 80. Hydra reads an entry only through `ConfigStore.load`, which
    copies it and deep-copies its `node`, so the conversion is made once per schema and never mutated. Each
    compose deep-copies the whole ConfigStore too (Hydra's CachingConfigRepository): a stored entry, never
    changed, is its own copy.
    """

    def __init__(self, name: str, schema: type, group: str | None) -> None:
        self.schema = schema
        self._own: DictConfig | None = None
        super().__init__(name=name, node=None, group=group, package=None, provider=None)  # type: ignore[arg-type]

    @property
    def node(self) -> DictConfig:
        return self._own if self._own is not None else _structured(self.schema)

    @node.setter
    def node(self, value: DictConfig | None) -> None:
        self._own = value  # ConfigStore.load sets its copy's node to a deep copy

    def __deepcopy__(self, memo: dict[int, Any]) -> LazySchema:
        if self._own is None:
            return self
        clone = copy.copy(self)
        clone._own = copy.deepcopy(self._own, memo)
        return clone


def register() -> ConfigStore:
    """Store the run schema and every subpackage's entry schemas in Hydra's ConfigStore (each a `LazySchema`),
    and install the cached package config source (memlab.config_source)."""
    register_resolvers()
    config_source.install()
    cs = ConfigStore.instance()
    cs.repo["run_schema.yaml"] = LazySchema("run_schema.yaml", RunConfig, None)
    groups = cs.repo.setdefault("schema", {})
    for (group, name), node in schemas().items():
        groups.setdefault(group, {})[f"{name}.yaml"] = LazySchema(f"{name}.yaml", node, f"schema/{group}")
    return cs
