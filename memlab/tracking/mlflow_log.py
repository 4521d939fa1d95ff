"""`logger=mlflow`: each finished run as an MLflow run, in a local store by default (no server).

What goes where:

- metrics: every number of metrics.json, under a name MLflow accepts (`mlflow_name`: ``@`` becomes
  ``_at_``, so ``longterm.recall@10`` is ``longterm.recall_at_10``; any other character MLflow refuses
  becomes ``_u<hex code>_``); `from_mlflow_name` turns it back, and a run whose names would not come
  back unchanged (or would collide) is refused, so the mapping stays one to one;
- params: the resolved config flattened to dotted keys (``context.strategy.max_tokens``; list items
  by index, ``context.strategies.1.counter``); a value longer than MLflow's limit (6,000 characters)
  is cut there and its key listed in the tag ``memlab.truncated_params`` (config.yaml, an artifact,
  has it whole);
- tags (cut at MLflow's 8,000 characters): ``memlab.name``, ``memlab.seed``, ``memlab.overrides``,
  ``memlab.tags``, ``memlab.run_dir`` and MLflow's own ``mlflow.source.git.commit``;
- artifacts: the files of the run directory (reports, metrics, config, manifest).

The default store is ``sqlite:///reports/mlflow.db`` with artifacts under ``reports/mlartifacts``
(MLflow 3 refuses its old ``./mlruns`` file store unless told otherwise); `mlflow ui
--backend-store-uri sqlite:///reports/mlflow.db` shows the runs. Writers to one SQLite store take
turns (``<db>.lock``), so the jobs of a parallel sweep do not race to create its tables.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memlab.errors import MemlabError, MissingExtraError
from memlab.tracking.base import FinishedRun, RunLogger, file_lock

INSTALL_HINT = "logger=mlflow needs MLflow, which is not installed: pip install 'memlab[mlflow]'"
DEFAULT_TRACKING_URI = "sqlite:///reports/mlflow.db"
DEFAULT_ARTIFACT_ROOT = "reports/mlartifacts"
_SQLITE = "sqlite:///"
_ALLOWED = re.compile(r"[\w./\- :]")  # MLflow's metric, param and tag key characters
_AT = "_at_"
_ESCAPED = re.compile(r"_u([0-9a-f]+)_")


def mlflow_name(name: str) -> str:
    """`name` in the characters MLflow accepts in a metric or param key.

    Args:
        name: A metric or parameter name.

    >>> mlflow_name("longterm.recall@10.cat_multi-hop"), mlflow_name("a+b")
    ('longterm.recall_at_10.cat_multi-hop', 'a_u2b_b')
    """
    return "".join(ch if _ALLOWED.fullmatch(ch) else _AT if ch == "@" else f"_u{ord(ch):x}_" for ch in name)


def from_mlflow_name(name: str) -> str:
    """The memlab name `mlflow_name` made `name` from.

    Args:
        name: A key `mlflow_name` wrote.

    >>> from_mlflow_name("longterm.recall_at_10"), from_mlflow_name("a_u2b_b")
    ('longterm.recall@10', 'a+b')
    """
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), name.replace(_AT, "@"))


def flatten(node: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """Dotted keys and string values of a config tree (list items by index; empty containers as ``{}``/``[]``).

    >>> dict(flatten({"context": {"max_tokens": 2000, "strategies": [{"counter": "exact"}]}, "tags": []}))
    {'context.max_tokens': '2000', 'context.strategies.0.counter': 'exact', 'tags': '[]'}
    """
    items = node.items() if isinstance(node, Mapping) else enumerate(node) if isinstance(node, list) else None
    if items is None or not node:
        yield prefix, node if isinstance(node, str) else json.dumps(node)
        return
    for key, value in items:
        yield from flatten(value, f"{prefix}.{key}" if prefix else str(key))


def _mlflow() -> Any:
    try:
        import mlflow
    except ImportError as e:
        raise MissingExtraError(INSTALL_HINT) from e
    return mlflow


class MlflowLogger(RunLogger):
    """Logs each finished run to MLflow (module docstring): experiment `experiment`, store `tracking_uri`.

    Parameters: the fields of `memlab.tracking.schemas.MlflowLoggerConfig`, each documented there once.
    """

    def __init__(
        self,
        tracking_uri: str = DEFAULT_TRACKING_URI,
        experiment: str = "memlab",
        artifact_root: str = DEFAULT_ARTIFACT_ROOT,
        artifacts: bool = True,
        http_retries: int = 2,
        http_timeout_s: int = 10,
    ) -> None:
        self.mlflow = _mlflow()  # at start: a missing extra stops the run before it replays anything
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.artifact_root = artifact_root
        self.artifacts = artifacts
        self.http = {
            "MLFLOW_HTTP_REQUEST_MAX_RETRIES": str(http_retries),
            "MLFLOW_HTTP_REQUEST_TIMEOUT": str(http_timeout_s),
        }

    @classmethod
    def check_installed(cls) -> None:
        _mlflow()

    def log_run(self, run: FinishedRun) -> None:
        from mlflow.entities import Metric, Param, RunTag
        from mlflow.utils.validation import (
            MAX_METRICS_PER_BATCH,
            MAX_PARAM_VAL_LENGTH,
            MAX_PARAMS_TAGS_PER_BATCH,
            MAX_TAG_VAL_LENGTH,
        )

        metrics = mlflow_metrics(run.metrics)
        config = dict(flatten(run.config))
        params = {mlflow_name(key): value[:MAX_PARAM_VAL_LENGTH] for key, value in config.items()}
        truncated = [key for key, value in config.items() if len(value) > MAX_PARAM_VAL_LENGTH]
        tags = {
            "memlab.name": run.name,
            "memlab.seed": str(run.manifest.get("seed")),
            "memlab.overrides": " ".join(run.overrides),
            "memlab.tags": ",".join(map(str, run.manifest.get("tags", []))),
            "memlab.run_dir": str(run.run_dir.resolve()),
            "mlflow.source.git.commit": str(run.manifest.get("git_revision") or ""),
        }
        if truncated:
            tags["memlab.truncated_params"] = ",".join(truncated)
        tags = {k: v[:MAX_TAG_VAL_LENGTH] for k, v in tags.items()}
        stamp = int(run.finished_at.timestamp() * 1000)
        logging.getLogger("mlflow").setLevel(logging.WARNING)  # not its table-creation chatter on every run
        with self._turn():
            client = self.mlflow.tracking.MlflowClient(tracking_uri=self.tracking_uri)
            run_name = (" ".join(run.overrides) or run.run_dir.name)[:MAX_TAG_VAL_LENGTH]
            run_id = client.create_run(self._experiment_id(client), start_time=stamp, run_name=run_name).info.run_id
            for chunk in _chunks([Metric(k, v, stamp, 0) for k, v in metrics.items()], MAX_METRICS_PER_BATCH):
                client.log_batch(run_id, metrics=chunk)
            for chunk in _chunks([Param(k, v) for k, v in params.items()], MAX_PARAMS_TAGS_PER_BATCH):
                client.log_batch(run_id, params=chunk)
            for chunk in _chunks([RunTag(k, v) for k, v in tags.items()], MAX_PARAMS_TAGS_PER_BATCH):
                client.log_batch(run_id, tags=chunk)
            if self.artifacts:
                for name in run.files:
                    client.log_artifact(run_id, str(run.run_dir / name))
            client.set_terminated(run_id, end_time=stamp)

    def _turn(self) -> Any:
        """The SQLite store's lock (its tables are made by the first writer), else a server's retries and timeout.

        MLflow reads them from its environment variables at each request: set for the block, then restored.
        """
        if self.tracking_uri.startswith(_SQLITE):
            return file_lock(Path(self.tracking_uri.removeprefix(_SQLITE)))
        return _environment(self.http)

    def _experiment_id(self, client: Any) -> str:
        found = client.get_experiment_by_name(self.experiment)
        if found is not None:
            return str(found.experiment_id)
        return str(
            client.create_experiment(self.experiment, artifact_location=Path(self.artifact_root).resolve().as_uri())
        )


def mlflow_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The numeric metrics under their MLflow names; a name that would not map back one to one is refused."""
    mapped: dict[str, float] = {}
    for name, value in metrics.items():
        if value is None or isinstance(value, str):
            continue  # undefined on this run (no such question, ...): MLflow has no null
        key = mlflow_name(name)
        if from_mlflow_name(key) != name or key in mapped:
            raise MemlabError(f"metric {name!r} has no one-to-one MLflow name ({key!r}); rename it")
        mapped[key] = float(value)
    return mapped


def _chunks(items: Sequence[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """`values` set in `os.environ` for the block (a variable the user set is kept), then as they were."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update({name: value for name, value in values.items() if before[name] is None})
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
