"""`xdist_group` under pytest 9: the group's suffix on each node id, which pytest-xdist 3.8 no longer manages to add.

xdist's worker renames a grouped test `path::name@group` by setting `item._nodeid`; pytest 9 keeps the node id
in `item._id` (a `NodeId`), so the rename is lost, `--dist loadgroup` sees no group and spreads a group's tests
over the workers (checked with `-v`: a group's tests ran on gw0 and gw1). Here the same rename, on `_id`.
"""

from __future__ import annotations

import pytest
from _pytest.nodeid import coerce_node_id


def name_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under `--dist loadgroup` (a worker), suffix each grouped test's node id with `@group`, as xdist intends."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        groups = sorted(
            {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
        )
        suffix = "@" + "_".join(groups)
        if groups and not item.nodeid.endswith(suffix):
            item._id = coerce_node_id(item.nodeid + suffix)  # type: ignore[attr-defined]
