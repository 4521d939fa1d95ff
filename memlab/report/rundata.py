"""A run directory as data: what `run_experiment` writes and what reports and comparisons read back.

Layout of a run directory (every file but `error.json` is written by a finished run):

- `metrics.json`: deterministic metrics, byte-identical for the same config and seed;
- `latency.json`: latency percentiles and the same-machine reference time (vary per run);
- `calls.csv`, `questions.csv`, `latency.csv`: per call, per probe question, per timed step;
- with long-term memory, `retrievals.jsonl` (per question: ranked memory ids, scores, cited turns, each
  re-ranking stage's moves), `retrievals.trec` and `retrievals.qrels` (TREC run and qrels: ranx or
  trec_eval on them give metrics.json's `longterm.recall@K` and `longterm.ndcg@10`);
- `config.yaml` (resolved), `manifest.json` (overrides, versions, data hash);
- `report.md`, `report.html`;
- `error.json`: only in a sweep's job that failed: the error's type and message.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memlab.errors import MemlabError, first_line
from memlab.metrics import (
    DEFAULT_PRICING_MODEL,
    EXCLUDED_CATEGORIES,
    all_events,
    compute_latency,
    compute_metrics,
    latency_samples,
    probe_rows,
)
from memlab.metrics.answers import ANSWER_ERROR, JUDGE_ERROR, JUDGE_UNPARSED, answerable
from memlab.metrics.longterm import retrieval_lines, trec_qrels, trec_run
from memlab.metrics.retention import RETENTION_METRICS
from memlab.report.table import Table
from memlab.rundir import canonical_json
from memlab.sim.records import CallRecord, ProbeRecord, Record

METRICS_FILE = "metrics.json"
LATENCY_FILE = "latency.json"
RETRIEVALS_FILE = "retrievals.jsonl"
ERROR_FILE = "error.json"
STOPPED_FILE = "stopped.json"  # a sweep job stopped at sim.stop_after_session: its checkpoint, no run
COMPARISON_HTML = "comparison.html"  # written with comparison.csv and .md as one set (`write_comparison`)
# Every file memlab writes into a run folder (a run's, a failed or stopped job's marker, a comparison written into
# it): a new run published into a reused folder drops them all, whether it writes each again or not, so that no
# retrievals.jsonl or questions.jsonl of an earlier run sits beside its metrics.json (`memlab.rundir.publish`).
RESULT_FILES = frozenset(
    {
        METRICS_FILE,
        LATENCY_FILE,
        RETRIEVALS_FILE,
        ERROR_FILE,
        STOPPED_FILE,
        "calls.csv",
        "questions.csv",
        "questions.jsonl",
        "latency.csv",
        "manifest.json",
        "config.yaml",
        "run.log",
        "profile.txt",
        "report.md",
        "report.html",
        "retrievals.trec",
        "retrievals.qrels",
        "comparison.csv",
        "comparison.md",
        COMPARISON_HTML,
    }
)
CALL_COLUMNS = (
    "dialogue",
    "session",
    "turn",
    "message_id",
    "messages_in",
    "messages_kept",
    "prompt_tokens",
    "completion_tokens",
    "full_tokens",
    "tool_tokens",
    "tool_calls",
)
# questions.csv's leading columns, which every probe row has (`memlab.metrics.probe_rows`): a run without probes
# still writes them, as calls.csv writes its header with no call; a row's other columns follow in order.
_QUESTION_TEXT = ("dialogue", "probe", "category", "question", "answer", "evidence")  # what a probe row says
QUESTION_COLUMNS = (*_QUESTION_TEXT, "prompt_tokens", *RETENTION_METRICS)
LATENCY_COLUMNS = ("stage", "latency_us")
# The columns each table writes from Python strings (`typed_column` keeps them as they are): read back as text,
# or pandas would make a number of "007" or "3.50" and a gap of "NA" (`_read_csv`).
CALL_TEXT = ("dialogue", "session", "message_id", "tool_calls")
QUESTION_TEXT = (
    *_QUESTION_TEXT,
    "generated",
    ANSWER_ERROR,
    JUDGE_ERROR,
    JUDGE_UNPARSED,
)
LATENCY_TEXT = ("stage",)


@dataclass
class RunData:
    """Everything a report needs about one run (or a failed job: `error` set, metrics empty).

    Args:
        path: The run folder.
        metrics: metrics.json.
        latency: latency.json.
        calls: calls.csv.
        questions: questions.csv.
        latency_samples: latency.csv.
        config: The resolved config (config.yaml).
        manifest: manifest.json.
        error: error.json of a failed job (None: it finished).
        retrievals: retrievals.jsonl's lines (a long-term run's ranked memories per question).
    """

    path: Path
    metrics: dict[str, Any] = field(default_factory=dict)
    latency: dict[str, Any] = field(default_factory=dict)
    calls: Table = field(default_factory=lambda: Table(CALL_COLUMNS))
    questions: Table = field(default_factory=lambda: Table(()))
    latency_samples: Table = field(default_factory=lambda: Table(LATENCY_COLUMNS))
    config: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    retrievals: list[dict[str, Any]] = field(default_factory=list)  # retrievals.jsonl's lines

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def name(self) -> str:
        return str(self.manifest.get("name") or self.config.get("name") or self.path.name)

    @classmethod
    def from_records(
        cls,
        path: Path,
        records: Sequence[Record],
        *,
        pricing_model: str = DEFAULT_PRICING_MODEL,
        context_window: int | None = None,
        manifest: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
        overall_excludes: Sequence[str] = EXCLUDED_CATEGORIES,
    ) -> RunData:
        """Measure a replay's records: metrics, latencies and the per-call, per-question, per-step tables."""
        questions = probe_rows(records)
        return cls(
            path=path,
            metrics=compute_metrics(
                records,
                pricing_model=pricing_model,
                context_window=context_window,
                probe_table=questions,
                overall_excludes=overall_excludes,
            ),
            latency=compute_latency(records),
            calls=calls_table(records),
            questions=questions_table(questions),
            latency_samples=latency_table(latency_samples(all_events(records))),
            config=config or {},
            manifest=manifest or {},
            retrievals=retrieval_lines((r for r in records if isinstance(r, ProbeRecord)), overall_excludes),
        )

    def all_metrics(self) -> dict[str, Any]:
        """Deterministic metrics and latencies together, as reports show them."""
        return {**self.metrics, **self.latency}


def calls_table(records: Sequence[Record]) -> Table:
    """The calls.csv table: one row per simulated LLM call.

    Args:
        records: The run's records (memlab.sim), in replay order.
    """
    rows = [
        {
            "dialogue": r.dialogue_id,
            "session": r.session_id,
            "turn": r.turn,
            "message_id": r.message_id,
            "messages_in": r.messages_in,
            "messages_kept": r.messages_kept,
            "prompt_tokens": r.prompt_tokens,
            "completion_tokens": r.completion_tokens,
            "full_tokens": r.full_tokens,
            "tool_tokens": r.tool_tokens,
            "tool_calls": " ".join(r.tool_calls),
        }
        for r in records
        if isinstance(r, CallRecord)
    ]
    return Table.from_records(rows, CALL_COLUMNS)


def questions_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """The questions.csv table: one row per probe, `QUESTION_COLUMNS` first (a header even without a probe).

    Args:
        rows: The probe rows (`memlab.metrics.probe_rows`).
    """
    return Table.from_records(rows, list(dict.fromkeys([*QUESTION_COLUMNS, *(key for row in rows for key in row)])))


def latency_table(samples: Mapping[str, Sequence[int]]) -> Table:
    """The latency.csv table: one row per timed step (stage, latency_us).

    Args:
        samples: Each step's timings in microseconds.
    """
    rows = [{"stage": stage, "latency_us": us} for stage, values in samples.items() for us in values]
    return Table.from_records(rows, LATENCY_COLUMNS)


def _text(cell: Any) -> str:
    """A text cell as written: a run read back from its CSV has NaN for an empty cell."""
    return "" if cell is None or (isinstance(cell, float) and math.isnan(cell)) else str(cell)


def hypotheses_jsonl(questions: Table) -> str:
    """questions.jsonl as LongMemEval's evaluation script reads it: one ``{question_id, hypothesis}`` per line.

    One line per question answered. A question whose answer call failed (`answer_error`), or that was not asked
    (no gold answer, not adversarial), is left out: evaluate_qa.py scores every line it reads, and ignores any
    other field, so an empty hypothesis would count as a wrong answer rather than as no answer.
    """
    lines = [
        json.dumps({"question_id": str(row["probe"]), "hypothesis": _text(row["generated"])}, ensure_ascii=False)
        for row in questions.records()
        if answerable(row) and not _text(row.get(ANSWER_ERROR))
    ]
    return "".join(f"{line}\n" for line in lines)


def run_files(run: RunData) -> dict[str, str]:
    """The files of a finished run directory (config.yaml aside), reports included.

    With answer evaluation (`eval.answers=true`) the generated answers also go to questions.jsonl.

    Args:
        run: A run read back (`load_run`).
    """
    from memlab.report.run_report import run_report_html, run_report_md

    answers = {"questions.jsonl": hypotheses_jsonl(run.questions)} if "generated" in run.questions else {}
    return {
        **answers,
        **retrieval_files(run),
        METRICS_FILE: canonical_json(run.metrics),
        LATENCY_FILE: canonical_json(run.latency),
        "calls.csv": run.calls.to_csv(),
        "questions.csv": run.questions.to_csv(),
        "latency.csv": run.latency_samples.to_csv(),
        "manifest.json": canonical_json(run.manifest),
        "report.md": run_report_md(run),
        "report.html": run_report_html(run),
    }


def retrieval_files(run: RunData) -> dict[str, str]:
    """retrievals.jsonl, retrievals.trec and retrievals.qrels of a run that retrieved long-term memories."""
    if not run.retrievals:
        return {}
    lines = "".join(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n" for line in run.retrievals)
    name = re.sub(r"\s+", "_", run.name) or "memlab"
    return {
        RETRIEVALS_FILE: lines,
        "retrievals.trec": trec_run(run.retrievals, name),
        "retrievals.qrels": trec_qrels(run.retrievals),
    }


def is_run_dir(path: Path) -> bool:
    """Whether `path` is a run folder: it holds metrics.json, or a failed job's error.json.

    Args:
        path: A folder.
    """
    return (path / METRICS_FILE).is_file() or (path / ERROR_FILE).is_file()


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise MemlabError(f"{path}: not JSON ({e.msg} at line {e.lineno})") from None
    except (UnicodeDecodeError, RecursionError, ValueError) as e:  # a byte, a depth, a number Python refuses
        raise MemlabError(f"{path}: cannot be read ({type(e).__name__}: {e})") from None
    if not isinstance(data, dict):
        raise MemlabError(f"{path}: expected a JSON object")
    return data


def _read_numbers(path: Path) -> dict[str, float | int | None]:
    """metrics.json or latency.json: a JSON object of numbers and nulls, as a run writes them (an edited or damaged
    file is refused here, naming the key, not compared or ranked as text)."""
    data = _read_json(path)
    for key, value in data.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise MemlabError(f"{path}: {key}: expected a number or null, got {json.dumps(value)[:60]}")
    return data


def _read_csv(path: Path, columns: Sequence[str] = (), text: Sequence[str] = ()) -> Table:
    """A CSV file read back as written: the `text` columns as strings, the others by pandas' type inference, an
    empty cell a gap and no other (reading runs is for multi-run reports, which load pandas)."""
    if not path.is_file() or path.stat().st_size == 0:
        return Table(tuple(columns))
    import pandas as pd

    try:
        frame = pd.read_csv(path, dtype=dict.fromkeys(text, str), keep_default_na=False, na_values=[""])
    except pd.errors.EmptyDataError:
        return Table(tuple(columns))
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as e:
        raise MemlabError(f"{path}: not a readable CSV file ({first_line(e)})") from None
    return Table.from_frame(frame)


def load_run(path: Path | str) -> RunData:
    """Read a run directory back (a failed job's too).

    Args:
        path: A run folder.
    """
    path = Path(path)
    if not is_run_dir(path):
        raise MemlabError(f"{path}: not a run directory (no {METRICS_FILE} or {ERROR_FILE})")
    return RunData(
        path=path,
        metrics=_read_numbers(path / METRICS_FILE),
        latency=_read_numbers(path / LATENCY_FILE),
        calls=_read_csv(path / "calls.csv", CALL_COLUMNS, CALL_TEXT),
        questions=_read_csv(path / "questions.csv", text=QUESTION_TEXT),
        latency_samples=_read_csv(path / "latency.csv", LATENCY_COLUMNS, LATENCY_TEXT),
        config=_read_yaml(path / "config.yaml"),
        manifest=_read_json(path / "manifest.json"),
        error=_read_json(path / ERROR_FILE) if (path / ERROR_FILE).is_file() else None,
        retrievals=_read_jsonl(path / RETRIEVALS_FILE),
    )


def _read_yaml(path: Path) -> dict[str, Any]:
    """A run's config.yaml (none: {}); a damaged one is refused naming the file."""
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise MemlabError(f"{path}: not a readable YAML file ({first_line(e)})") from None
    if data is not None and not isinstance(data, dict):
        raise MemlabError(f"{path}: expected a mapping of config keys")
    return data or {}


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows: list[dict[str, Any]] = []
    try:
        with path.open(encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    rows.append(json.loads(line))
    except (ValueError, RecursionError) as e:  # not JSON (a ValueError), not UTF-8, too deep
        raise MemlabError(f"{path}: cannot be read after {len(rows)} rows ({first_line(e)})") from None
    return rows


def _natural_key(path: Path) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def find_runs(paths: Iterable[Path | str]) -> list[Path]:
    """Run directories named by `paths`: each is a run directory or a sweep directory holding them.

    Args:
        paths: Run folders and sweep folders.
    """
    found: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if not p.is_dir():
            raise MemlabError(f"{p}: no such directory")
        if is_run_dir(p):
            found.append(p)
            continue
        runs = sorted((c for c in p.iterdir() if c.is_dir() and is_run_dir(c)), key=_natural_key)
        if not runs:
            raise MemlabError(f"{p}: neither a run directory nor a sweep directory holding run directories")
        found.extend(runs)
    return found


def write_stopped(run_dir: Path, checkpoint: str, session: int, overrides: Sequence[str] = ()) -> Path:
    """Mark a sweep job as stopped on purpose (`sim.stop_after_session`): `stopped.json` names its checkpoint's
    store key, so the sweep tells it from a job that never finished.

    Args:
        run_dir: The job's folder.
        checkpoint: The store key its checkpoint was saved under.
        session: The session it stopped after.
        overrides: The job's overrides.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    target = run_dir / STOPPED_FILE
    payload = {"checkpoint": checkpoint, "stopped_after_session": session, "overrides": list(overrides)}
    target.write_text(canonical_json(payload), encoding="utf-8")
    return target


def write_error(run_dir: Path, error: BaseException, overrides: Sequence[str] = (), trace: str = "") -> Path:
    """Mark a sweep job as failed: `error.json` with the error's type, message, traceback and overrides.

    Args:
        run_dir: The job's folder.
        error: What the job raised.
        overrides: The job's overrides.
        trace: The formatted traceback.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    target = run_dir / ERROR_FILE
    payload = {"type": type(error).__name__, "message": str(error), "overrides": list(overrides), "traceback": trace}
    target.write_text(canonical_json(payload), encoding="utf-8")
    return target
