"""Experiment tracking: the `logger` group records each finished run elsewhere (a CSV file, MLflow).

`run_experiment` builds the configured logger before the replay (a missing extra fails at start)
and hands it a `FinishedRun` once the run directory is published; `logger=none` records nothing.
"""

from memlab.tracking.base import FinishedRun, RunLogger, now, record_run
from memlab.tracking.csv_log import CsvLogger
from memlab.tracking.mlflow_log import MlflowLogger, from_mlflow_name, mlflow_name

__all__ = [
    "CsvLogger",
    "FinishedRun",
    "MlflowLogger",
    "RunLogger",
    "from_mlflow_name",
    "mlflow_name",
    "now",
    "record_run",
]
