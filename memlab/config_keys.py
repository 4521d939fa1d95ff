"""Errors that teach: an unknown or misplaced config key, explained with the keys that do exist.

Hydra rejects ``context.language=zh`` with "Key 'language' not in 'SummarizeContextConfig'"
and suggests ``+context.language=zh``, which the struct check then lets through. Here both
cases end in one message that lists the node's valid keys, names the path where a key of that
name does exist (``context.strategy.language``) and the group entries that have it; `check_keys`
rejects what a ``+key=value`` override added that no schema declares (``+foo=1``).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Iterator, Sequence
from importlib import resources
from typing import Any

import yaml
from hydra.errors import InstantiationException
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, InterpolationResolutionError

from memlab.config import RunConfig, schemas
from memlab.embed.schemas import LitellmEmbedConfig
from memlab.errors import MemlabError
from memlab.llm.litellm_import import CHAT_ARGS, EMBEDDING_ARGS, extra_params_problem
from memlab.llm.schemas import LitellmConfig

GROUPS = tuple(f.name for f in dataclasses.fields(RunConfig) if f.type in ("Any", Any))
# Hydra plugins an extra brings, by the config Hydra could not find without them.
PLUGIN_EXTRAS = {"hydra/sweeper/optuna": "optuna", "hydra/launcher/ray": "ray"}
_MISSING_PLUGIN = re.compile(r"Could not find '(hydra/\w+/\w+)'")
# `longterm.agents.<new id>` from an override: OmegaConf builds no typed entry there.
_NEW_AGENT = (
    "longterm.agents: a new agent id cannot be added on the command line (OmegaConf builds no typed agents.<id> "
    "entry from an override; an agent the entry lists, such as chat, can be set); add it in a config file of your "
    "own: conf/longterm/mine.yaml holding `defaults: [default, _self_]` and `agents: {bot: {enabled: true}}`, then "
    "memlab run --config-dir conf longterm=mine agent_id=bot"
)
# The litellm arguments a node's `extra_params` may not hold (memlab passes them itself), by the node's schema.
CLAIMED_PARAMS = {LitellmConfig: CHAT_ARGS, LitellmEmbedConfig: EMBEDDING_ARGS}
_ABSENT = object()  # `OmegaConf.select`'s answer for a key the node does not have
# `hooks=summarization`: hooks is a dict of named hooks, not a group with one choice.
_NOT_IN_DEFAULTS = re.compile(r"Could not override '(\w+)'\. No match in the defaults list\..*use \+\1=(\S+)", re.S)


class ConfigKeyProblem(MemlabError):
    """A config key that no schema declares, explained."""


def _fields(schema: type) -> list[str]:
    """The keys a user sets on a node typed `schema` (`_target_` and such are the config's own)."""
    return [f.name for f in dataclasses.fields(schema) if not f.name.startswith("_")]


def _paths(node: Any, name: str, prefix: str = "") -> Iterator[str]:
    """Every path below `node` whose last key is `name`."""
    if isinstance(node, DictConfig) and not node._is_none():
        items: Iterator[tuple[Any, Any]] = iter(node.items_ex(resolve=False))
    elif isinstance(node, ListConfig) and not node._is_none():
        items = enumerate(node._iter_ex(resolve=False))
    else:
        return
    for key, child in items:
        path = f"{prefix}{key}"
        if key == name:
            yield path
        yield from _paths(child if isinstance(child, DictConfig | ListConfig) else None, name, f"{path}.")


def _entries_with(group: str, name: str) -> list[str]:
    return sorted(entry for (g, entry), schema in schemas().items() if g == group and name in _fields(schema))


def defaults_nodes(group: str, entry: str) -> dict[str, type]:
    """The nodes `conf/<group>/<entry>.yaml` nests through its defaults list, by package.

    ``- /schema/context_strategy/trim@strategy`` in `conf/context/trim.yaml` gives ``{"strategy": TrimConfig}``.
    """
    path = resources.files("memlab.conf").joinpath(group, f"{entry}.yaml")
    if not path.is_file():
        return {}
    found = schemas()
    nested = {}
    entry_yaml = OmegaConf.to_container(OmegaConf.create(path.read_text(encoding="utf-8")))
    for item in entry_yaml.get("defaults") or [] if isinstance(entry_yaml, dict) else []:
        source, _, package = str(item).removeprefix("/schema/").partition("@")
        group_of_node, _, name = source.rpartition("/")
        if str(item).startswith("/schema/") and package not in ("", "_here_"):
            nested[package] = found[(group_of_node, name)]
    return nested


def _nested_paths(group: str, schema: type, name: str) -> list[str]:
    """Where key `name` is in the nodes that the entries of `group` typed `schema` nest by defaults."""
    entries = sorted(e for (g, e), s in schemas().items() if g == group and s is schema)
    where: dict[str, list[str]] = {}
    for entry in entries:
        for package, node in defaults_nodes(group, entry).items():
            for p in _paths(OmegaConf.structured(node), name):
                where.setdefault(f"{package}.{p}", []).append(entry)
    return [p if len(found) == len(entries) else f"{p} ({group}={'|'.join(found)})" for p, found in where.items()]


def explain(full_key: str, schema: type | None, node: Any = None) -> str:
    """Why `full_key` is not a key of the node typed `schema`, and what would be right.

    `node` is that node as composed, when there is one; else the schema's defaults are searched.
    """
    parent, _, name = full_key.replace("[", ".").replace("]", "").rpartition(".")
    where = f"{parent} ({schema.__name__})" if parent and schema else parent or "the run config"
    message = f"{full_key}: no such key in {where}"
    if schema is None or not dataclasses.is_dataclass(schema):
        return message
    valid = _fields(schema)
    message += "; its keys are " + ", ".join(valid) if valid else "; it has no keys"
    hints = []
    group = full_key.split(".", 1)[0]
    if node is None:
        nested = [p for p in _paths(OmegaConf.structured(schema), name) if "." in p]
        nested += _nested_paths(group, schema, name) if parent == group else []
    else:
        nested = [p for p in _paths(node, name) if "." in p]
    if nested:
        hints.append("it is at " + " or ".join(f"{parent}.{p}" if parent else p for p in nested))
    if group in GROUPS and parent == group:
        entries = _entries_with(group, name)
        if entries:
            hints.append(f"{group}=" + "|".join(entries) + f" have {parent}.{name}")
    close = difflib.get_close_matches(name, valid, n=2)
    if close:
        hints.append("did you mean " + " or ".join(f"{parent}.{c}" if parent else c for c in close) + "?")
    if not parent:
        hints += [
            f"{group}.{name} is a key of {group}=" + "|".join(entries)
            for group in GROUPS
            if (entries := _entries_with(group, name))
        ]
    if not parent and name not in GROUPS:
        group_close = difflib.get_close_matches(name, GROUPS, n=1)
        if group_close and group_close[0] not in close:
            hints.append(f"did you mean the group {group_close[0]} ({group_close[0]}=NAME)?")
    return message + ("; " + "; ".join(hints) if hints else "")


def _entries_typed(group: str, schema: type) -> list[str]:
    return sorted(entry for (g, entry), s in schemas().items() if g == group and s is schema)


def _entries_with_path(group: str, path: str) -> list[str]:
    """The entries of `group` whose nested nodes (`defaults_nodes`) have the key at `path` (``strategy.max_tokens``)."""
    package, _, rest = path.partition(".")
    entries = {entry for (g, entry) in schemas() if g == group}
    return sorted(
        entry
        for entry in entries
        if (node := defaults_nodes(group, entry).get(package)) is not None
        and rest in _paths(OmegaConf.structured(node), rest.rpartition(".")[2])
    )


def explain_untyped(full_key: str, parent: Any) -> str | None:
    """Why `full_key` is not a key of an untyped node (`context.strategy` under `context=none`), from its typed parent.

    None when no enclosing node is typed.
    """
    node, up = parent, 0
    while node is not None and not dataclasses.is_dataclass(OmegaConf.get_type(node)):
        node, up = node._get_parent(), up + 1
    parts = full_key.split(".")
    if node is None or up == 0 or len(parts) <= up + 1:
        return None
    schema = OmegaConf.get_type(node)
    assert schema is not None
    typed, untyped, name = ".".join(parts[: -1 - up]), ".".join(parts[:-1]), parts[-1]
    group, relative = parts[0], ".".join(parts[len(typed.split(".")) :])
    entries = _entries_typed(group, schema) if typed == group else []
    where = f"{typed}={'|'.join(entries)}" if entries else typed
    message = f"{full_key}: no such key; {untyped} has no keys in {where} ({schema.__name__}), whose keys are "
    message += ", ".join(_fields(schema))
    having = _entries_with_path(group, relative) if typed == group else []
    if having:
        message += f"; {group}=" + "|".join(having) + f" have {full_key}"
        message += f" (the knob {typed}.{name} reaches it)" if name in _fields(schema) else ""
    return message


def _swept_entries(group: str, overrides: Sequence[str]) -> list[str]:
    """The entries of `group` that a sweep's command line lists (``context=trim,summarize``); none if not swept."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ValueType
    from hydra.errors import OverrideParseException

    for arg in reversed(overrides):  # Hydra takes the last of one key
        if arg.partition("=")[0] != group:
            continue
        try:
            (override,) = OverridesParser.create().parse_overrides([arg])
        except OverrideParseException:
            return []
        listed = override.value_type in (ValueType.CHOICE_SWEEP, ValueType.SIMPLE_CHOICE_SWEEP)
        return list(override.sweep_string_iterator()) if listed else []
    return []


def _entry_node(group: str, entry: str) -> DictConfig | None:
    """The keys of entry `group=entry`: its schema's, with the nodes its defaults nest (None: it has no schema)."""
    schema = schemas().get((group, entry))
    if schema is None:
        return None
    node = OmegaConf.structured(schema)
    with open_dict(node):
        for package, nested in defaults_nodes(group, entry).items():
            OmegaConf.update(node, package, OmegaConf.structured(nested), force_add=True)
    return node


def _default_entry(group: str) -> str | None:
    """The entry conf/config.yaml's defaults list picks for `group` (``none`` for context)."""
    text = resources.files("memlab.conf").joinpath("config.yaml").read_text(encoding="utf-8")
    loaded = yaml.safe_load(text)
    picks = [item for item in loaded.get("defaults") or [] if isinstance(item, dict)]
    return next((str(item[group]) for item in picks if group in item), None)


def explain_swept(full_key: str, overrides: Sequence[str]) -> str | None:
    """Why a sweep across the entries of `full_key`'s group refused it, judged against the swept entries.

    Hydra sets a plain ``key=value`` on the config the sweep starts from, which holds the group's default entry, before
    it composes any job; refused there, the key is every swept entry's (then ``++`` sets it in each job), some of
    theirs (named, to sweep apart), or none's (where a key of that name is). None when the group is not swept, or
    a swept entry has no schema.

    Args:
        full_key: The key refused (`context.strategy.keep_system`).
        overrides: The command line's overrides, where the swept entries and the value given are read.
    """
    group, _, relative = full_key.partition(".")
    swept = _swept_entries(group, overrides)
    found = {entry: _entry_node(group, entry) for entry in swept}
    nodes = {entry: node for entry, node in found.items() if node is not None}
    if not relative or not swept or len(nodes) < len(found):
        return None
    having = [e for e, node in nodes.items() if OmegaConf.select(node, relative, default=_ABSENT) is not _ABSENT]
    value = next((o.partition("=")[2] for o in overrides if o.lstrip("+~").partition("=")[0] == full_key), "VALUE")
    if having == swept:
        default = _default_entry(group)
        start = f" (the default {group}={default})" if default else ""
        return (
            f"{full_key}: every swept entry ({group}={'|'.join(swept)}) has it, but Hydra sets it first on the config "
            f"the sweep starts from{start}, which lacks it; write ++{full_key}={value}, which sets it in each job"
        )
    if having:
        others = [e for e in swept if e not in having]
        add = "" if len(having) == 1 else "++"
        return (
            f"{full_key}: of the swept entries only {group}={'|'.join(having)} "
            f"{'has' if len(having) == 1 else 'have'} it, not {group}={'|'.join(others)}; sweep those apart: "
            f"memlab run -m {group}={','.join(having)} {add}{full_key}={value}"
        )
    parent, _, name = full_key.rpartition(".")
    where: dict[str, list[str]] = {}
    for entry, node in nodes.items():
        for path in _paths(node, name):
            where.setdefault(f"{group}.{path}", []).append(entry)
    message = f"{full_key}: no swept entry ({group}={'|'.join(swept)}) has it"
    if where:
        message += "; it is at " + " or ".join(f"{p} ({group}={'|'.join(es)})" for p, es in where.items())
    inner = parent.partition(".")[2]  # the refused key's node, below the group's
    siblings = [OmegaConf.select(node, inner) if inner else node for node in nodes.values()]
    keys = sorted({str(k) for node in siblings if isinstance(node, DictConfig) for k in node})
    close = difflib.get_close_matches(name, keys, n=2)
    if close:
        message += "; did you mean " + " or ".join(f"{parent}.{c}" for c in close) + "?"
    return message


def explain_untyped_entry(full_key: str, parent: Any, overrides: Sequence[str] = ()) -> str | None:
    """Why `full_key` is not a key of a group's entry that has no schema (a user's own YAML), None for other keys.

    Such an entry takes only the keys its YAML sets (a new one with `+`), not the shared knobs of the typed
    entries (`context.keep_last`): said as `no such key in context (dict)`, naming neither the entry nor the way.

    Args:
        full_key: The key refused (`context.keep_last`).
        parent: The node it was looked for in, as composed.
        overrides: The command line's overrides: the entry chosen (`context=mine`) and the value given are read there.
    """
    parts = full_key.split(".")
    group, name = parts[0], parts[-1]
    if group not in GROUPS or len(parts) < 2 or not isinstance(parent, DictConfig):
        return None
    node: Any = parent
    for _ in parts[1:-1]:  # up to the group's node: none typed on the way
        if dataclasses.is_dataclass(OmegaConf.get_type(node)):
            return None
        node = node._get_parent()
    if node is None or dataclasses.is_dataclass(OmegaConf.get_type(node)):
        return None
    chosen = [o.partition("=")[2] for o in overrides if o.partition("=")[0] == group]
    entry = f"{group}={chosen[-1]}" if chosen else f"the {group} entry chosen"
    value = next((o.partition("=")[2] for o in overrides if o.lstrip("+~").partition("=")[0] == full_key), "VALUE")
    keys = [str(k) for k in parent if not str(k).startswith("_")]
    parent_key = ".".join(parts[:-1])
    message = (
        f"{full_key}: no such key: {entry} has no schema (an untyped entry), so it takes only the keys its YAML sets; "
        f"{parent_key} has " + (", ".join(keys) if keys else "no keys")
    )
    close = difflib.get_close_matches(name, keys, n=1)
    if close:
        message += f"; did you mean {parent_key}.{close[0]}?"
    typed = _entries_with(group, name) if len(parts) == 2 else []
    if typed:
        message += f"; {full_key} is a knob of the typed entries ({group}={'|'.join(typed)}), which untyped ones lack"
    strategy = parent.get("strategy") if len(parts) == 2 else None
    if isinstance(strategy, DictConfig):  # the parameter the knob would have set, on the strategy itself
        add = "" if name in strategy else "+"
        message += f"; set the strategy's own parameter: {add}{group}.strategy.{name}={value}"
    else:
        message += f"; add it to the entry with +: +{full_key}={value}"
    return message + " (or give the entry a schema: docs/extending.md, the typed entry)"


def explain_error(error: BaseException, overrides: Sequence[str] = ()) -> str:
    """One line for a Hydra composition error: an unknown key explained, else Hydra's words joined.

    Args:
        error: The error composing the config raised.
        overrides: The command line's overrides, which name the entries chosen (for an untyped entry's key).
    """
    cause = error.__cause__ if error.__cause__ is not None else error
    full_key = str(getattr(cause, "full_key", "") or "")
    said = f"{error} {cause}"
    if (
        (isinstance(cause, ConfigKeyError) and full_key.startswith("longterm.agents.") and full_key.count(".") == 2)
        or "dict is not a subclass of AgentOverrides" in said  # ``+longterm.agents.bot...``
        or ("is not in struct" in said and "Dict[str, AgentOverrides]" in said)  # ``longterm.agents={bot: ...}``
    ):
        return _NEW_AGENT
    if isinstance(cause, ConfigKeyError | ConfigAttributeError) and getattr(cause, "full_key", None):
        swept = explain_swept(str(cause.full_key), overrides)  # refused on the config a sweep starts from
        if swept is not None:
            return swept
        untyped = None
        if not dataclasses.is_dataclass(cause.object_type):
            parent = getattr(cause, "parent_node", None)
            untyped = explain_untyped(str(cause.full_key), parent) or explain_untyped_entry(
                str(cause.full_key), parent, overrides
            )
        return untyped or explain(str(cause.full_key), cause.object_type)
    text = str(error) if cause is error else f"{error}: {cause}"
    hooks = _NOT_IN_DEFAULTS.search(text)
    if hooks and hooks[1] == "hooks":
        entry = hooks[2]
        return (
            f"hooks={entry}: hooks holds named hooks, each added under its own name: "
            f"+hooks@hooks.{entry}={entry} (its keys: memlab run --help hooks={entry})"
        )
    if "does not support sweep type : INTERVAL_SWEEP" in text:  # the basic sweeper lists values; it draws none
        swept = ", ".join(o for o in overrides if "interval(" in o) or "interval(...)"
        return (
            f"{swept}: interval() needs an optuna sweeper, which draws values from it: add hydra/sweeper=optuna "
            "(pip install 'memlab[optuna]'), or use hparams_search=window_budget; the basic sweeper takes a list "
            "(a,b,c) or range(start,stop,step)"
        )
    plugin = _MISSING_PLUGIN.search(text)
    if plugin and plugin[1] in PLUGIN_EXTRAS:
        kind, _, name = plugin[1].removeprefix("hydra/").partition("/")
        return (
            f"hydra/{kind}={name} is not installed (Hydra's {name} {kind} plugin, {_users_of(plugin[1])}): "
            f"pip install 'memlab[{PLUGIN_EXTRAS[plugin[1]]}]'"
        )
    from hydra.errors import OverrideParseException  # hydra is loaded already when a composition fails

    if isinstance(error, OverrideParseException):
        override = str(error.override or "")
        if override and override not in text:  # Hydra names the override in some of its messages only
            text = f"{override}: {text}"
        if not text.isascii():
            text += " (a value with characters outside ASCII is quoted, inside the shell's quotes: \"key='value'\")"
        elif "=" in override.partition("=")[2]:  # a run folder's name, say
            text += " (a value holding '=' is quoted, inside the shell's quotes: \"key='value'\")"
    options = [ln.strip() for ln in text.splitlines() if ln.startswith("\t") and "provider=" not in ln]
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("\t")]
    lines = [ln for ln in lines if not ln.startswith(("full_key:", "object_type=", "Config search path"))]
    return " ".join(lines) + (" " + ", ".join(options) if options else "")


def _users_of(plugin: str) -> str:
    """Which configs of conf/ select the Hydra plugin config `plugin` (``hydra/sweeper/optuna``), for an error."""
    kind, name = plugin.removeprefix("hydra/").split("/")
    conf = resources.files("memlab.conf")
    users = [
        f"{group.name}={entry.name.removesuffix('.yaml')}"
        for group in sorted(conf.iterdir(), key=lambda p: p.name)
        if group.is_dir()
        for entry in sorted(group.iterdir(), key=lambda p: p.name)
        if entry.name.endswith(".yaml")
        and re.search(rf"^\s*- override /hydra/{kind}: {name}\s*$", entry.read_text(encoding="utf-8"), re.M)
    ]
    return "which " + " and ".join(users) + " use" if users else "asked for here"


def _dict_nodes(path: str, child: Any) -> Iterator[tuple[str, DictConfig]]:
    """`child` when it is a dict node, or the dict nodes of a list node, each with its path."""
    if isinstance(child, DictConfig) and not child._is_none():
        yield path, child
    elif isinstance(child, ListConfig) and not child._is_none():
        for i, item in enumerate(child._iter_ex(resolve=False)):
            if isinstance(item, DictConfig):
                yield f"{path}[{i}]", item


def _unknown(node: DictConfig, prefix: str) -> Iterator[tuple[str, type, DictConfig]]:
    schema = OmegaConf.get_type(node)
    known = (
        {f.name for f in dataclasses.fields(schema)}
        if schema is not None and dataclasses.is_dataclass(schema)
        else None
    )
    for key, child in node.items_ex(resolve=False):
        path = prefix + str(key)
        if known is not None and key not in known and schema is not None:
            yield path, schema, node
        else:
            for below, item in _dict_nodes(path, child):
                yield from _unknown(item, f"{below}.")


def typed_nodes(node: DictConfig, path: str = "") -> Iterator[tuple[str, type, DictConfig]]:
    """Every node below `node` (itself included) built from a schema dataclass: (path, schema, node).

    Interpolations (``llm: ${llm}``) are not followed, so each node is listed once, at the path it is written.
    """
    schema = OmegaConf.get_type(node)
    if schema is not None and dataclasses.is_dataclass(schema):
        yield path, schema, node
    for key, child in node.items_ex(resolve=False):
        for below, item in _dict_nodes(f"{path}.{key!s}" if path else str(key), child):
            yield from typed_nodes(item, below)


def _claimed_params(cfg: DictConfig) -> Iterator[str]:
    """An `extra_params` key that memlab passes to litellm itself (``+llm.extra_params.api_key=...``), explained."""
    for path, schema, node in typed_nodes(cfg):
        extra = node.get("extra_params") if schema in CLAIMED_PARAMS else None
        if isinstance(extra, DictConfig) and (problem := extra_params_problem(path, extra, CLAIMED_PARAMS[schema])):
            yield problem


def check_keys(cfg: DictConfig) -> None:
    """Fail on any key of a typed node that its schema does not declare (what ``+key=value`` adds), and on a key of
    a litellm node's `extra_params` that memlab passes itself (named with the setting to use instead, not its value).

    A ``hydra`` node at the top (in a config composed for a sweep's check, before Hydra takes it out) is Hydra's.
    """
    problems = [explain(path, schema, node) for path, schema, node in _unknown(cfg, "") if path != "hydra"]
    problems += _claimed_params(cfg)
    if problems:
        raise ConfigKeyProblem("; ".join(problems) if len(problems) == 1 else "\n  ".join(["", *problems]).lstrip())


def root_cause(error: BaseException) -> BaseException:
    """The error a Hydra instantiation or a config resolver wrapped (the user's real problem), else the error itself."""
    while isinstance(error, InstantiationException | InterpolationResolutionError):
        # OmegaConf raises a resolver's error anew while handling it: the user's error is its context.
        inner = error.__cause__ or (error.__context__ if isinstance(error, InterpolationResolutionError) else None)
        if inner is None:
            break
        error = inner
    return error


def one_line(error: BaseException) -> str:
    """A user error's message on one line (an instantiation error names the target that failed)."""
    text = " ".join(str(error).split())
    if isinstance(error, ImportError) and text.startswith("Error loading"):  # a `_target_` Hydra could not import
        text += " (a module of your own: run from its folder with PYTHONPATH=., or pip install its package)"
    return text if isinstance(error, MemlabError) else f"{type(error).__name__}: {text}"
