"""Every public callable documents its parameters (Google style: an ``Args:`` section naming each one).

The public API is what `memlab` and each of its subpackages and top-level modules list in `__all__`.
A parameter counts as documented when the callable's docstring (for a class: the class's or its
`__init__`'s) has an ``Args:`` (or ``Attributes:``) section naming it; a dataclass field may instead
carry its own docstring (the string under the field, as the config schemas do). A knob is declared
once: a callable that a config schema builds (its `_target_`) and whose docstring names that schema
is documented by the schema's field docstrings (what `memlab run --help group=name` prints).
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import pkgutil
import re
from typing import Any

from hydra.utils import get_object

import memlab
from memlab.config import schemas
from memlab.config_help import field_docs

_SECTION = re.compile(r"^(Args|Arguments|Parameters|Attributes):\s*$", re.M)
_ENTRY = re.compile(r"^\s+\**(\w+)(\s*\([^)]*\))?:")
_END = re.compile(r"^(Returns|Raises|Yields|Examples?|Note|See Also)\b|^>>>")


def args_documented(doc: str | None) -> set[str]:
    """The parameter names an ``Args:`` section of `doc` names.

    >>> sorted(args_documented("Do it.\\n\\nArgs:\\n    a: one.\\n    **rest (int): more.\\n\\nReturns:\\n    b: x"))
    ['a', 'rest']
    """
    if not doc:
        return set()
    found: set[str] = set()
    for match in _SECTION.finditer(doc):
        for line in doc[match.end() :].splitlines()[1:]:
            if _END.match(line):
                break
            if entry := _ENTRY.match(line):
                found.add(entry.group(1))
    return found


def _targets() -> dict[str, list[type]]:
    """``{dotted target: the config schemas that build it}``."""
    out: dict[str, list[type]] = {}
    for schema in schemas().values():
        target = next((f.default for f in dataclasses.fields(schema) if f.name == "_target_"), None)
        if isinstance(target, str):
            out.setdefault(target, []).append(schema)
    return out


_TARGETS = _targets()


def _named_schemas(obj: Any) -> list[type]:
    """The config schemas that build `obj` and that its docstring names."""
    doc = inspect.getdoc(obj) or ""
    name = getattr(obj, "__name__", "")
    return [
        schema
        for target, found in _TARGETS.items()
        if target.rsplit(".", 1)[-1] == name and getattr(get_object(target), "__wrapped__", get_object(target)) is obj
        for schema in found
        if schema.__name__ in doc
    ]


def undocumented(obj: Any) -> list[str]:
    """The parameters of callable `obj` its docstrings (or the config schemas they name) do not describe."""
    if getattr(obj, "_is_protocol", False):
        return []  # an interface: its methods are what implementations document
    if isinstance(obj, enum.EnumMeta):
        return []  # calling an enum looks a member up (Enum's own signature): its members are its API
    try:
        params = [p for p in inspect.signature(obj).parameters if p not in ("self", "cls")]
    except (TypeError, ValueError):
        return []
    documented = args_documented(inspect.getdoc(obj))
    for schema in _named_schemas(obj):
        documented |= set(field_docs(schema))
    if inspect.isclass(obj):
        init = obj.__dict__.get("__init__")
        documented |= args_documented(inspect.getdoc(init) if init is not None else None)
        if dataclasses.is_dataclass(obj):
            documented |= set(field_docs(obj))
    return [p for p in params if p not in documented]


def public_callables() -> dict[str, Any]:
    """``{"module.name": object}`` of every callable memlab's modules define and list in an `__all__`."""
    children = [m.name for m in pkgutil.iter_modules(memlab.__path__) if m.name != "__main__"]
    modules = [memlab, *(importlib.import_module(f"memlab.{name}") for name in children)]
    out: dict[str, Any] = {}
    for module in modules:
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            home = getattr(obj, "__module__", "") or ""
            if callable(obj) and home.startswith("memlab"):
                out.setdefault(f"{home}.{getattr(obj, '__qualname__', name)}", obj)
    return out


def test_the_check_sees_a_missing_parameter() -> None:
    def documented(a: int, b: int) -> int:
        """Add.

        Args:
            a: One.
            b: The other.
        """
        return a + b

    def half(a: int, b: int) -> int:
        """Add.

        Args:
            a: One.
        """
        return a + b

    assert (undocumented(documented), undocumented(half)) == ([], ["b"])


def test_every_public_callable_documents_its_parameters() -> None:
    found = public_callables()
    assert {"memlab.longterm.service.LongTermMemoryService", "memlab.sim.replay.simulate"} <= set(found)  # none exempt
    missing = {name: undocumented(obj) for name, obj in found.items()}
    assert {k: v for k, v in missing.items() if v} == {}, "document these parameters in an Args: section"
