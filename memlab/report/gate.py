"""The regression gate behind `memlab compare BASELINE CANDIDATE`: metric by metric, with tolerances.

Each side is a run directory, a sweep directory (runs matched by label) or a baseline JSON file
(`{"format": 1, "runs": {label: {metric: value}}}`, as `--update` writes it); the candidate may also be a run's
metrics.json. Anything else is refused (a file that is not a baseline, a folder with no metrics).
Directions and tolerances come from the metric registry (`memlab.metrics.registry`): a metric
moves within tolerance when |candidate - baseline| <= abs + rel x |baseline| (numpy.isclose's
rule). A regression, an unexpected change or a missing metric fails the gate. A tolerances YAML
(`--tolerances`) may override a rule's fields for the metrics a glob matches.

Latencies are compared only as a ratio to the reference workload timed in the same run
(`latency.reference_us`), since machines differ, and they fail the gate only when asked
(`--latency`, `LATENCY_GATE`): on a loaded machine a step's tail moves by 2x between unchanged
runs, and a CI gate that fails on noise gets switched off. Ungated, a ratio above the limit
is shown as "slower". A committed baseline holds no latencies, so a candidate's are not "new".
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from tabulate import tabulate

from memlab.errors import MemlabError, first_line
from memlab.metrics import registry
from memlab.report.comparison import run_labels
from memlab.report.fmt import fmt_delta, fmt_value, is_missing
from memlab.report.rundata import METRICS_FILE, RunData, find_runs, load_run
from memlab.rundir import canonical_json

_V = TypeVar("_V")
BASELINE_FORMAT = 1
REFERENCE = "latency.reference_us"
LATENCY_MAX_INCREASE = 3.0  # a latency may grow up to 3x relative to the same run's reference
LATENCY_MIN_US = 200.0  # latencies under this on both sides are timer noise: not compared
LATENCY_PREFIX = "latency."  # latency.json's names: never in a committed baseline
Status = Literal["ok", "improved", "slower", "ungated", "regression", "changed", "missing", "new"]
FAILING: tuple[Status, ...] = ("regression", "changed", "missing")
RULE_KEYS = {"pattern", "better", "abs", "rel", "skip", "ratio_to", "max_increase", "min_value", "gate"}
NUMBER_KEYS = {"abs", "rel", "max_increase", "min_value"}  # a tolerances rule's finite numbers >= 0
FLAG_KEYS = {"skip", "gate"}


@dataclass(frozen=True)
class Rule:
    """How one metric may move between baseline and candidate."""

    better: Literal["higher", "lower", "none"] = "none"
    abs: float = registry.ABS_TOL
    rel: float = registry.REL_TOL
    skip: bool = False
    ratio_to: str | None = None
    max_increase: float = LATENCY_MAX_INCREASE
    min_value: float = 0.0  # ratios of values this small on both sides are timer noise: not compared
    gate: bool = True  # False: shown, never failing: a ratio above max_increase "slower", any other failure "ungated"


@dataclass(frozen=True)
class Override:
    """A tolerances rule: the `Rule` fields it sets for the metrics its glob `pattern` matches, over the registry's."""

    pattern: str
    sets: Mapping[str, Any]
    where: str = ""  # the rule in its file (`tol.yaml: rules[0]`), for an error about it


@dataclass(frozen=True)
class Row:
    """One metric of one configuration, compared."""

    config: str
    metric: str
    baseline: Any
    candidate: Any
    status: Status
    note: str = ""


def load_rules(path: Path | str | None = None) -> list[Override]:
    """Override rules from a tolerances YAML (`{rules: [{pattern, better, abs, rel, ...}]}`); none by default.

    The first override whose glob `pattern` matches a metric sets the fields it names; the others stay the
    registry's rule for that metric (`rule_for`), except `gate`, true unless the override says false: naming a
    latency in the file is how it is gated.

    Args:
        path: The tolerances YAML (None: no override rules).
    """
    if path is None:
        return []
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise MemlabError(f"{path}: cannot read tolerances ({first_line(e)})") from None
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise MemlabError(f"{path}: expected a mapping with a list under 'rules'")
    overrides = []
    for i, raw in enumerate(data["rules"]):
        if not isinstance(raw, dict) or "pattern" not in raw:
            raise MemlabError(f"{path}: rules[{i}] needs a 'pattern'")
        unknown = set(raw) - RULE_KEYS
        if unknown:
            raise MemlabError(f"{path}: rules[{i}] has unknown key(s) {sorted(unknown)}; allowed: {sorted(RULE_KEYS)}")
        if raw.get("better", "none") not in ("higher", "lower", "none"):
            raise MemlabError(f"{path}: rules[{i}].better={raw['better']!r}; expected higher, lower or none")
        for key, value in raw.items():
            expected = expected_value(key, value)
            if expected:
                raise MemlabError(f"{path}: rules[{i}].{key}={value!r}; expected {expected}")
        sets = {"gate": True, **{k: v for k, v in raw.items() if k != "pattern"}}
        overrides.append(Override(raw["pattern"], sets, f"{path}: rules[{i}]"))
    return overrides


def check_ratio_targets(rules: Sequence[Override], *sides: Mapping[str, Mapping[str, Any]]) -> None:
    """A `MemlabError` naming the rule whose `ratio_to` is no metric: neither registered nor in any side's metrics.

    A misspelt `ratio_to` made every ratio "not comparable", so the metrics it covered passed whatever they did.

    Args:
        rules: The tolerances rules (`load_rules`).
        *sides: The sides compared (`load_side`).
    """
    for rule in rules:
        name = rule.sets.get("ratio_to")
        if name is None or registry.lookup(name) is not None or any(name in m for side in sides for m in side.values()):
            continue
        raise MemlabError(
            f"{rule.where or rule.pattern}.ratio_to={name!r}: no such metric (not in the metric registry, "
            "nor in either side's metrics)"
        )


def expected_value(key: str, value: Any) -> str | None:
    """What a tolerances rule's `key` must be, if `value` is not (a text `abs` would crash a compare, a NaN fail it)."""
    if key in NUMBER_KEYS and (
        isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf
    ):
        try:
            as_text = isinstance(value, str) and 0 <= float(value) < math.inf  # 1e-3: YAML 1.1's floats need a dot
        except ValueError:
            as_text = False
        return "a finite number >= 0" + (
            f" (YAML reads {value} as text: a number needs a dot, as in 1.0e-6)" if as_text else ""
        )
    if key in FLAG_KEYS and not isinstance(value, bool):
        return "true or false"
    if key == "pattern" and not isinstance(value, str):
        return "a glob"
    if key == "ratio_to" and not isinstance(value, str | None):
        return "a metric's name"
    return None


def registry_rule(metric: str) -> Rule:
    """The rule the registry gives `metric`: its direction and tolerance; latencies as ratios, not gated."""
    spec = registry.lookup(metric)
    if spec is None:
        return Rule()
    if spec.unit == registry.MICROSECONDS:
        return Rule(ratio_to=REFERENCE, min_value=LATENCY_MIN_US, gate=False)
    return Rule(better=spec.better, abs=spec.abs_tol, rel=spec.rel_tol)


# `memlab compare --latency`: every latency gated, as a ratio to the same run's reference.
LATENCY_GATE = Override("latency.*_us", {"ratio_to": REFERENCE, "min_value": LATENCY_MIN_US, "gate": True})


def rule_for(metric: str, rules: Sequence[Override] = ()) -> Rule:
    """The registry's rule for `metric`, with what the first of `rules` matching it sets (the reference: skipped)."""
    if metric == REFERENCE:
        return Rule(skip=True)
    override = next((o for o in rules if fnmatch.fnmatchcase(metric, o.pattern)), None)
    return registry_rule(metric) if override is None else replace(registry_rule(metric), **override.sets)


# What two sides must share for their metrics to differ by the change alone: (where it is read, what differs).
PROVENANCE = {
    "data_sha256": "replayed different data (manifest.json's data_sha256: a seed, a dataset or its selection)",
    "tokenizer": "counted tokens with different tokenizers (config tokenizer)",
    "pricing.model": "priced tokens at different models (config pricing.model)",
}


def run_provenance(run: RunData) -> dict[str, str]:
    """The run's `PROVENANCE` values it records (a folder written before one of them was recorded lacks it)."""
    config = run.config or {}
    found = {
        "data_sha256": run.manifest.get("data_sha256"),
        "tokenizer": config.get("tokenizer"),
        "pricing.model": (config.get("pricing") or {}).get("model"),
    }
    return {k: str(v) for k, v in found.items() if v is not None}


def _one_each(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> bool:
    """Whether each side holds one configuration: two runs, compared whatever their labels (`_pairs`)."""
    return len(baseline) == 1 and len(candidate) == 1


def _pairs(baseline: Mapping[str, _V], candidate: Mapping[str, _V]) -> list[tuple[str, _V, _V | None]]:
    """The configurations compared: (label, the baseline's, the candidate's or None when it has none).

    One configuration on each side: compared whatever their labels (labelled as the baseline's); else matched by label.
    """
    if _one_each(baseline, candidate):
        (label, base), cand = next(iter(baseline.items())), next(iter(candidate.values()))
        return [(label, base, cand)]
    return [(label, base, candidate.get(label)) for label, base in baseline.items()]


def provenance_notes(
    baseline: Mapping[str, Mapping[str, str]], candidate: Mapping[str, Mapping[str, str]]
) -> list[str]:
    """What the two sides did not share (`PROVENANCE`), per configuration compared: their metrics differ by it too.

    Only what both sides record is compared (a baseline JSON file written before `--update` recorded it has none).

    Args:
        baseline: The baseline's `Side.provenance`.
        candidate: The same of the candidate.
    """
    pairs = [(b, c, label) for label, b, c in _pairs(baseline, candidate) if c is not None]
    notes = []
    for key, what in PROVENANCE.items():
        differ = [(label, b[key], c[key]) for b, c, label in pairs if key in b and key in c and b[key] != c[key]]
        if not differ:
            continue
        label, b, c = differ[0]
        where = f" in {len(differ)} of {len(pairs)} configurations" if len(pairs) > 1 else ""
        named = f"{label}: " if label and len(pairs) > 1 else ""  # one pair: compared whatever its labels
        example = f"{named}{b[:16]} in the baseline, {c[:16]} in the candidate"
        notes.append(f"the sides {what}{where} ({example}), so their metrics differ by it as well as by the change")
    return notes


@dataclass(frozen=True)
class Side:
    """One side of a comparison, read once (`read_side`): its metrics and the runs they came from, by label."""

    metrics: dict[str, dict[str, Any]]  # as `load_side` gives them
    runs: dict[str, RunData] = field(default_factory=dict)  # a folder's runs, by the same labels
    run_folder: Path | None = None  # a run's metrics.json: its run folder, read only for its provenance
    recorded: dict[str, dict[str, str]] = field(default_factory=dict)  # a baseline file's own `provenance`

    def provenance(self) -> dict[str, dict[str, str]]:
        """What each configuration replayed and counted with (`PROVENANCE`), by label.

        A baseline JSON file: what `--update` recorded in it ({} for a file written before it recorded any). A run's
        metrics.json: its run folder's.
        """
        if self.run_folder is not None:
            return {"": run_provenance(load_run(self.run_folder))}
        if self.recorded:
            return self.recorded
        return {label: run_provenance(run) for label, run in self.runs.items() if not run.failed}


def labelled_runs(path: Path) -> dict[str, RunData]:
    """The runs of a run or sweep folder, by configuration label ("" for a single run)."""
    runs = [load_run(p) for p in find_runs([path])]
    labels = run_labels(runs) if len(runs) > 1 else [""]
    return dict(zip(labels, runs, strict=True))


def load_side(path: Path | str, *, metrics_file: bool = False) -> dict[str, dict[str, Any]]:
    """Metrics per configuration label from a run dir, a sweep dir or a baseline JSON file, checked.

    Anything else is refused, naming the file and what is wrong: read as a side, a file that is not a baseline or a
    folder with no metrics would make every metric "new" (or missing), and the gate would pass (or fail) on nothing.

    Args:
        path: A run folder, a sweep folder or a baseline JSON file (as `baseline_json` writes it).
        metrics_file: Also accept a run's metrics.json (a JSON object of metrics), as a candidate may be given.
    """
    return read_side(path, metrics_file=metrics_file).metrics


def read_side(path: Path | str, *, metrics_file: bool = False) -> Side:
    """A side's metrics (`load_side`) and the runs they came from, each run read once.

    Args:
        path: As `load_side`'s.
        metrics_file: As `load_side`'s.
    """
    path = Path(path)
    if not path.exists():
        raise MemlabError(f"{path}: no such file or directory")
    if path.is_file():
        beside = metrics_file and path.name == METRICS_FILE and (path.parent / "manifest.json").is_file()
        metrics, recorded = file_metrics(path, metrics_file=metrics_file)
        return Side(metrics, run_folder=path.parent if beside else None, recorded=recorded)
    runs = labelled_runs(path)
    out = {}
    for label, run in runs.items():
        error = run.error or {}
        if not run.failed and not run.metrics:
            raise MemlabError(f"{run.path / METRICS_FILE}: holds no metrics")
        out[label] = run.all_metrics() if not run.failed else {"error": f"{error.get('type')}: {error.get('message')}"}
    return Side(out, runs)


def file_metrics(path: Path, *, metrics_file: bool) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, str]]]:
    """The metrics per configuration label of a baseline JSON file (or, with `metrics_file`, of a metrics.json), and
    the provenance the baseline recorded per label ({} for a metrics.json or a baseline without it)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise MemlabError(f"{path}: not JSON ({e.msg} at line {e.lineno})") from None
    except (OSError, ValueError, RecursionError) as e:  # not UTF-8 (a ValueError), too deep, unreadable
        raise MemlabError(f"{path}: cannot be read ({type(e).__name__}: {first_line(e)})") from None
    if metrics_file and isinstance(data, dict) and not {"format", "runs"} & data.keys():
        if data and all(k.startswith(LATENCY_PREFIX) for k in data):
            raise MemlabError(f"{path}: holds only latencies (a run's latency.json? give its run directory)")
        return {"": checked_metrics(str(path), data)}, {}
    runs = baseline_runs(path, data)
    return runs, baseline_provenance(path, data, runs)


def baseline_provenance(path: Path, data: Mapping[str, Any], runs: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """The `provenance` object of baseline file `path` (per label, `PROVENANCE` keys to strings); {} when absent."""
    recorded = data.get("provenance", {})
    where = f"{path}: provenance"
    if not isinstance(recorded, dict):
        raise MemlabError(f"{where}: expected an object of configurations, got {json.dumps(recorded)[:60]}")
    for label, values in recorded.items():
        if label not in runs:
            raise MemlabError(f"{where}[{json.dumps(label)}]: no such configuration in 'runs'")
        if not isinstance(values, dict) or not all(k in PROVENANCE and isinstance(v, str) for k, v in values.items()):
            raise MemlabError(
                f"{where}[{json.dumps(label)}]: expected strings for {', '.join(PROVENANCE)}, got "
                f"{json.dumps(values)[:60]}"
            )
    return {label: dict(values) for label, values in recorded.items()}


def baseline_runs(path: Path, data: Any) -> dict[str, dict[str, Any]]:
    """The configurations of baseline file `path` (its JSON `data`), refused unless they are what `--update` writes."""
    written = f"this memlab reads format {BASELINE_FORMAT}, as `memlab compare BASELINE CANDIDATE --update` writes it"
    if not isinstance(data, dict):
        raise MemlabError(f"{path}: not a memlab baseline: expected a JSON object ({written})")
    if "format" not in data:
        raise MemlabError(f"{path}: not a memlab baseline: no 'format' ({written})")
    if type(data["format"]) is not int or data["format"] != BASELINE_FORMAT:
        raise MemlabError(
            f"{path}: baseline format {json.dumps(data['format'])}; this memlab reads format {BASELINE_FORMAT}"
        )
    runs = data.get("runs")
    if not isinstance(runs, dict):
        raise MemlabError(f"{path}: not a memlab baseline: no 'runs' object of configurations ({written})")
    if not runs:
        raise MemlabError(f"{path}: holds no configuration ('runs' is empty)")
    out = {}
    for label, metrics in runs.items():
        if isinstance(metrics, dict) and set(metrics) == {"error"} and isinstance(metrics["error"], str):
            out[label] = dict(metrics)  # a failed configuration, as `--update --keep-failed` records it
        else:
            out[label] = checked_metrics(f"{path}: runs[{json.dumps(label)}]", metrics)
    return out


def checked_metrics(where: str, metrics: Any) -> dict[str, Any]:
    """`metrics` if an object of numbers and nulls, not all latencies; else an error about it, said `where`."""
    if not isinstance(metrics, dict):
        raise MemlabError(f"{where}: expected an object of metrics, got {json.dumps(metrics)[:60]}")
    for key, value in metrics.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise MemlabError(f"{where}: {key}: expected a number or null, got {json.dumps(value)[:60]}")
    if all(k.startswith(LATENCY_PREFIX) for k in metrics):
        raise MemlabError(f"{where}: holds no metrics")
    return dict(metrics)


def number(value: Any) -> float | None:
    """`value` as a float, None when it is no finite number (missing, null, NaN, ±Infinity)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def not_finite(b: Any, c: Any) -> str:
    """The note for a metric one side holds as ±Infinity ("" when neither does): compared as NaN is, a change."""
    infinite = [side for side, v in (("baseline", b), ("candidate", c)) if isinstance(v, float) and math.isinf(v)]
    return f"{' and '.join(infinite)}: not a finite number" if infinite else ""


def within(rule: Rule, base: float, cand: float) -> bool:
    """Whether `cand` is within `rule`'s tolerance of `base`: |c - b| <= abs + rel x |b|."""
    return abs(cand - base) <= rule.abs + rule.rel * abs(base)


def compare_metric(rule: Rule, name: str, base: Mapping[str, Any], cand: Mapping[str, Any]) -> tuple[Status, str]:
    """The status of metric `name` between two configurations' metrics.

    A rule with `gate: false` never fails: what would fail is shown, as "slower" (a ratio above its limit) or
    "ungated" (a regression, a change, a missing metric), with what it would have been in the note.
    """
    status, note = gated_status(rule, name, base, cand)
    if rule.gate or status not in FAILING:
        return status, note
    if status == "regression" and rule.ratio_to:
        return "slower", f"{note}; not gated (--latency gates it)"
    return "ungated", f"{status}{': ' + note if note else ''}; not gated"


def gated_status(rule: Rule, name: str, base: Mapping[str, Any], cand: Mapping[str, Any]) -> tuple[Status, str]:
    """The status of metric `name` under `rule`, as if gated (`compare_metric` says what `gate: false` makes of it)."""
    if name not in cand:
        return "missing", "not in candidate"
    b, c = base.get(name), cand.get(name)
    if rule.ratio_to:
        nb, nc = number(b), number(c)
        rb, rc = number(base.get(rule.ratio_to)), number(cand.get(rule.ratio_to))
        if nb is None or nc is None:
            if (is_missing(b) and is_missing(c)) or b == c:
                return "ok", "in neither" if is_missing(b) else ""
            if max((v for v in (nb, nc) if v is not None), default=math.inf) < rule.min_value:
                return "ok", f"ran in only one, below {rule.min_value:g}: not compared"
            return "changed", not_finite(b, c) or "ran in only one"
        if max(nb, nc) < rule.min_value:
            return "ok", f"below {rule.min_value:g}: not compared"
        if not rb or not rc or not nb:  # no ratio: it passes only when nothing moved
            if nb == nc and rb == rc:
                return "ok", "no ratio, unchanged"
            unusable = [
                f"{rule.ratio_to} is {'missing' if v is None else 0} in the {side}"
                for side, v in (("baseline", rb), ("candidate", rc))
                if not v
            ]
            why = "; ".join(unusable) or f"{name} is 0 in the baseline"
            return "changed", f"no ratio: {why}"
        ratio = (nc / rc) / (nb / rb)
        note = f"x{ratio:.2f} relative to {rule.ratio_to}"
        return ("ok" if ratio <= rule.max_increase else "regression"), note
    if is_missing(b) and is_missing(c):
        return "ok", ""
    fb, fc = number(b), number(c)
    if fb is None or fc is None:  # NaN, null or ±Infinity on a side: no direction, no tolerance
        return ("ok", "") if b == c else ("changed", not_finite(b, c))
    if within(rule, fb, fc):
        return "ok", ""
    delta = fmt_delta(name, fc - fb)
    if rule.better == "none":
        return "changed", delta
    worse = fc < fb if rule.better == "higher" else fc > fb
    return ("regression" if worse else "improved"), delta


CACHED_CALLS = "latency.cached_calls"


def cached_calls_differ(base: Mapping[str, Any], cand: Mapping[str, Any]) -> str:
    """`latency.cached_calls 3 vs 16` when the two sides' caches answered different numbers of model calls, else "".

    A process's caches (the offline model's summary memo, litellm's disk cache) are warmed by the jobs it ran
    before: the same configuration at another place in a sweep's order times other calls, x200 apart. Its
    latencies are then shown, not gated.
    """
    b, c = number(base.get(CACHED_CALLS)), number(cand.get(CACHED_CALLS))
    return "" if b is None or c is None or b == c else f"{CACHED_CALLS} {b:g} vs {c:g}"


def cache_notes(baseline: Mapping[str, Mapping[str, Any]], candidate: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The warning for the configurations whose latencies `compare_sides` does not gate (`cached_calls_differ`).

    Args:
        baseline: Metrics per configuration label (`load_side`).
        candidate: The same for the candidate.
    """
    pairs = [(label, b, c) for label, b, c in _pairs(baseline, candidate) if c is not None]
    differ = [(label, cached_calls_differ(b, c)) for label, b, c in pairs]
    differ = [(label, why) for label, why in differ if why]
    if not differ:
        return []
    label, why = differ[0]
    where = f"in {len(differ)} of {len(pairs)} configurations ({label}: {why})" if len(pairs) > 1 else f"({why})"
    return [
        f"the sides' caches answered different numbers of model calls {where}: a process's caches are warmed by the "
        "jobs it ran before (a sweep in another order), so those latencies are shown but not gated"
    ]


def compare_sides(
    baseline: Mapping[str, Mapping[str, Any]], candidate: Mapping[str, Mapping[str, Any]], rules: Sequence[Override]
) -> list[Row]:
    """Every metric of every configuration of the baseline, compared with the candidate's.

    Args:
        baseline: Metrics per configuration label (`load_side`).
        candidate: The same for the candidate.
        rules: Tolerance and direction overrides (`load_rules`).
    """
    rows = []
    for label, base, cand in _pairs(baseline, candidate):
        if cand is None:
            rows.append(Row(label, "*", "present", None, "missing", "configuration not in candidate"))
            continue
        if "error" in cand and "error" not in base:
            rows.append(Row(label, "*", "ok", "failed", "regression", str(cand["error"])))
            continue
        if "error" in base and "error" not in cand:  # a configuration that failed runs now: fixed, not missing
            rows.append(Row(label, "*", "failed", "ok", "improved", f"failed in the baseline ({base['error']})"))
            continue
        timed = any(n.startswith(LATENCY_PREFIX) for n in cand)  # a run's metrics.json alone has no latency.json
        warm = cached_calls_differ(base, cand)
        for name in sorted(base):
            rule = rule_for(name, rules)
            if rule.skip or (name.startswith(LATENCY_PREFIX) and not timed):
                continue
            status, note = compare_metric(rule, name, base, cand)
            if warm and name.startswith(LATENCY_PREFIX) and status in (*FAILING, "slower"):
                status, note = "ungated", f"{status}: {note}; not gated: {warm}"
            rows.append(Row(label, name, base.get(name), cand.get(name), status, note))
        for name in sorted(set(cand) - set(base)):
            if not name.startswith(LATENCY_PREFIX) and not rule_for(name, rules).skip:
                rows.append(Row(label, name, None, cand[name], "new", ""))
    if not _one_each(baseline, candidate):  # matched by label: the candidate's others are new
        for label in sorted(set(candidate) - set(baseline)):
            rows.append(Row(label, "*", None, "present", "new", "configuration not in baseline"))
    return rows


def failed(rows: Sequence[Row]) -> bool:
    """Whether any compared metric regressed (a row whose status is one of `FAILING`).

    Args:
        rows: The compared rows (`compare_sides`).
    """
    return any(r.status in FAILING for r in rows)


def format_rows(rows: Sequence[Row], *, show_all: bool = False) -> str:
    """A table of the compared metrics (only those not ok, unless `show_all`), and a one-line verdict.

    A metric only the candidate has is left out unless `show_all`; a configuration only the candidate has is
    listed, since it tells why a baseline's configuration may be missing (a sweep's labels that differ).

    Args:
        rows: The compared rows (`compare_sides`).
        show_all: Also list the metrics that are ok and those only the candidate has.
    """
    shown = [r for r in rows if show_all or not (r.status == "ok" or (r.status == "new" and r.metric != "*"))]
    counts = {
        s: sum(r.status == s for r in rows)
        for s in ("ok", "improved", "slower", "ungated", "new", "regression", "changed", "missing")
    }
    table = tabulate(
        [
            (
                r.config or "-",
                r.metric,
                fmt_value(r.metric, r.baseline),
                fmt_value(r.metric, r.candidate),
                r.status.upper() if r.status in FAILING else r.status,
                r.note,
            )
            for r in shown
        ],
        headers=("config", "metric", "baseline", "candidate", "status", "note"),
        tablefmt="github",
    )
    verdict = "FAIL" if failed(rows) else "PASS"
    summary = f"{verdict}: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    return (table + "\n\n" if shown else "") + summary


def failed_configurations(side: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The labels of `side`'s failed configurations: a baseline holding one passes while it fails the same way."""
    return [label for label, metrics in side.items() if "error" in metrics]


def baseline_json(
    side: Mapping[str, Mapping[str, Any]],
    rules: Sequence[Override],
    provenance: Mapping[str, Mapping[str, str]] | None = None,
) -> str:
    """The committed form of a baseline: deterministic metrics only (no latency), per configuration, and what each
    replayed and counted with (`PROVENANCE`, when given), so that a compare against the file warns as one against
    the folder would."""
    runs = {
        label: {k: v for k, v in metrics.items() if not k.startswith(LATENCY_PREFIX) and not rule_for(k, rules).skip}
        for label, metrics in side.items()
    }
    recorded = {label: dict(values) for label, values in (provenance or {}).items() if label in runs and values}
    return canonical_json({"format": BASELINE_FORMAT, "runs": runs, **({"provenance": recorded} if recorded else {})})
