"""Structured configs of the `logger` group: where each finished run is recorded besides its folder."""

from __future__ import annotations

from dataclasses import dataclass

from memlab import ranges
from memlab.tracking.csv_log import DEFAULT_PATH
from memlab.tracking.mlflow_log import DEFAULT_ARTIFACT_ROOT, DEFAULT_TRACKING_URI


@dataclass
class NoLoggerConfig:
    """`logger=none` (the default): the run folder only."""

    _target_: str = "memlab.tracking.RunLogger"


@dataclass
class CsvLoggerConfig:
    """`logger=csv`: one row per finished run appended to a CSV file."""

    _target_: str = "memlab.tracking.CsvLogger"
    path: str = DEFAULT_PATH
    """The CSV file (relative: from the working directory); made with its header if missing."""


@dataclass
class MlflowLoggerConfig:
    """`logger=mlflow`: each finished run as an MLflow run (extra `memlab[mlflow]`)."""

    _target_: str = "memlab.tracking.MlflowLogger"
    tracking_uri: str = DEFAULT_TRACKING_URI
    """MLflow's tracking store: a local SQLite file by default, or a server's http(s) URI."""
    experiment: str = "${name}"
    """The MLflow experiment the runs go to (default: the run's name)."""
    artifact_root: str = DEFAULT_ARTIFACT_ROOT
    """Where a new experiment keeps its artifacts (relative: from the working directory)."""
    artifacts: bool = True
    """Log the run folder's files (reports, metrics, config, manifest) as artifacts."""
    http_retries: int = ranges.count(2)
    """A tracking server's request retries (MLflow's own default, 7 with backoff, waits about 4 minutes on a server
    that is down, for every run of a sweep)."""
    http_timeout_s: int = ranges.ranged(10, ge=1, le=3_600)
    """Seconds a tracking server's request may take."""


SCHEMAS: dict[tuple[str, str], type] = {
    ("logger", "none"): NoLoggerConfig,
    ("logger", "csv"): CsvLoggerConfig,
    ("logger", "mlflow"): MlflowLoggerConfig,
}
