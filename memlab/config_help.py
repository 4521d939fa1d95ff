"""`memlab run --help TOPIC`: the keys of a config entry or section, with type, default, range and meaning.

A schema field is documented by the string on the line after it (an attribute docstring, which
Sphinx, mkdocstrings and editors read too)::

    keep_first: int = ranges.count(DEFAULT_KEEP_FIRST)
    \"\"\"Messages kept from the start of the conversation.\"\"\"

TOPIC is ``GROUP=ENTRY`` (``context=trim``: that entry as a run composes it, nested nodes
included) or a path of the default config (``sim``, ``eval``, ``context``).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import textwrap
import typing
from functools import cache
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from memlab.ranges import field_range


@cache
def field_docs(schema: type) -> dict[str, str]:
    """Each field's docstring, from the dataclass and its bases (a subclass's own wins)."""
    docs: dict[str, str] = {}
    for cls in reversed(schema.__mro__):
        if not dataclasses.is_dataclass(cls):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        except (OSError, TypeError):  # made at run time: no source to read
            continue
        body = typing.cast(ast.ClassDef, tree.body[0]).body
        for node, after in itertools.pairwise(body):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def describe(node: DictConfig, prefix: str) -> list[str]:
    """Two lines a key: ``path: type = default (range)`` and its docstring, nested nodes after their parent's keys."""
    schema = OmegaConf.get_type(node)
    typed = dataclasses.is_dataclass(schema)
    fields = {f.name: f for f in dataclasses.fields(schema)} if typed and isinstance(schema, type) else {}
    hints = typing.get_type_hints(schema) if fields else {}
    docs = field_docs(typing.cast(type, schema)) if fields else {}
    lines: list[str] = []
    nested: list[tuple[str, DictConfig]] = []
    for key in node:
        name = str(key)
        path = f"{prefix}.{name}" if prefix else name
        child = node._get_node(name)
        if name.startswith("_"):
            continue
        if isinstance(child, DictConfig) and not child._is_none() and not child._is_interpolation():
            nested.append((path, child))
            continue
        if isinstance(child, ListConfig) and len(child) and all(isinstance(x, DictConfig) for x in child):
            nested += [(f"{path}[{i}]", x) for i, x in enumerate(child)]  # e.g. COMPOSITE's steps
            continue
        kind = _type_name(hints[name]) if name in hints else "any"
        bounds = field_range(fields[name]) if name in fields else None
        value = _value(child)
        lines.append(f"  {path}: {kind} = {value}" + (f"  ({bounds})" if bounds else ""))
        if docs.get(name):
            lines += textwrap.wrap(docs[name], width=100, initial_indent=" " * 6, subsequent_indent=" " * 6)
    for path, child in nested:
        about = _summary(OmegaConf.get_type(child))
        lines.append(f"  {path}:" + (f"  # {about}" if about else ""))
        lines += describe(child, path)
    return lines


def node_help(cfg: DictConfig, path: str, title: str) -> str:
    """The help text of the node at `path` in the composed `cfg`, under a `title` line."""
    node = OmegaConf.select(cfg, path)
    if not isinstance(node, DictConfig):
        return f"{title}: {path} is {_value(cfg._get_node(path)) if node is not None else 'not set'}\n"
    about = _summary(OmegaConf.get_type(node))
    if about.startswith(f"`{title}`"):  # a schema that names its entry ("`context=trim` reads ..."): once
        head = title + about[len(title) + 2 :]
    else:
        head = f"{title}" + (f": {about}" if about else "")
    return "\n".join([head, *describe(node, path)]) + "\n"


def _summary(schema: Any) -> str:
    """The first line of a schema's docstring (dataclasses without one get a generated signature: none)."""
    doc = inspect.getdoc(schema) if dataclasses.is_dataclass(schema) else None
    if not doc or doc.startswith(f"{getattr(schema, '__name__', '')}("):
        return ""
    return doc.splitlines()[0]


def _value(node: Any) -> str:
    """A leaf as written in the config: interpolations unresolved, lists inline."""
    if isinstance(node, ListConfig | DictConfig):
        return str(OmegaConf.to_container(node, resolve=False))
    value = node._value() if hasattr(node, "_value") else node
    return "null" if value is None else str(value)


def _type_name(hint: Any) -> str:
    return (getattr(hint, "__name__", None) if not typing.get_args(hint) else None) or str(hint).replace("typing.", "")
