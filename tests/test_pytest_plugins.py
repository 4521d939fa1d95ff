"""The suite loads the five pytest plugins it uses and rewrites the asserts of its own modules, not of libraries.

pytest rewrites, on import and uncached, every module of each installed package that registers a plugin (langsmith,
hydra, anyio, platformdirs here): `--disable-plugin-autoload` in pyproject's addopts stops that (docs/speed.md).
"""

from __future__ import annotations

import sys

import pytest
from _pytest.assertion.rewrite import AssertionRewritingHook


def test_only_the_plugins_the_suite_uses_are_loaded(request: pytest.FixtureRequest) -> None:
    loaded = {dist.project_name for _, dist in request.config.pluginmanager.list_plugin_distinfo()}
    assert loaded == {"pytest-xdist", "pytest-benchmark", "hypothesis", "pytest-timeout", "pytest-rerunfailures"}


@pytest.mark.parametrize("library", ["hydra", "hypothesis", "langsmith"])
def test_a_library_that_registers_a_plugin_is_imported_as_it_is(library: str) -> None:
    __import__(library)
    assert not isinstance(sys.modules[library].__loader__, AssertionRewritingHook)


def test_the_suites_own_modules_are_rewritten() -> None:
    assert isinstance(sys.modules[__name__].__loader__, AssertionRewritingHook)
