"""tests/xdist_groups.py: under `--dist loadgroup` a grouped test's node id carries its group, so one worker runs it."""

from __future__ import annotations

import pytest


@pytest.mark.xdist_group("xdist_groups")
def test_a_grouped_test_carries_its_group_under_loadgroup(request: pytest.FixtureRequest) -> None:
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not a pytest-xdist worker under --dist loadgroup")
    assert request.node.nodeid.endswith("::test_a_grouped_test_carries_its_group_under_loadgroup@xdist_groups")
    grouped = [item for item in request.session.items if any(item.iter_markers("xdist_group"))]
    assert all("@" in item.nodeid for item in grouped)
