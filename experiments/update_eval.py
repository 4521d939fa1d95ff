"""Updated facts and cue words that revise nothing, on the current rules (docs/longterm.md: "Updated facts ...").

    python experiments/update_eval.py [--sets dev,heldout,heldout2,synthetic,misfire_dev,misfire_heldout]
                                      [--seeds 21-40] [--runs DIR] [OVERRIDE ...]

Each set is replayed with `memlab.api.run`, exactly as `memlab run` would, and scored by the run's own metric
functions over its probe records (a set of several runs is pooled by question, not averaged by run):

- the hand-written sets of ``datasets/updates/`` (README there: never tune on them; held-out is reported only),
  ``dataset=locomo longterm=locomo``: ``dev``/``heldout`` (updated facts), ``misfire_dev``/``misfire_heldout``
  (a later turn says "again", "now", "switched" ... and revises nothing);
- ``synthetic``: the generator's UPDATE probes on seeds 21-40, one run per seed, as docs/longterm.md measures
  ``longterm.newer_first`` (16 dialogues, update rate 0.5, ``longterm=chat agent_id=chat``).

Any further arguments are Hydra overrides applied to every run, e.g. the rules off:
``longterm.rerank=[decay,dedup]``. Runs go to ``--runs``
(default ``reports/updates/<time>``); two markdown tables go to stdout.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path

from memlab import api
from memlab.metrics.longterm import UPDATE_DEPTH, decoy_metrics, newer_first_metrics, update_rank_metrics
from memlab.sim import ProbeRecord

SETS = "datasets/updates"
LOCOMO_SETS = {
    "dev": "dev.json",
    "heldout": "heldout.json",
    "heldout2": "heldout2.json",
    "heldout3": "heldout3.json",
    "heldout4": "heldout4.json",
    "misfire_dev": "misfire_dev.json",
    "misfire_heldout": "misfire_heldout.json",
}
SYNTHETIC = "synthetic"
SYNTHETIC_SEEDS = range(21, 41)
# docs/longterm.md's measurement of longterm.newer_first on the generator.
SYNTHETIC_OVERRIDES = (
    "dataset=synthetic",
    "dataset.dialogues=16",
    "dataset.update_rate=0.5",
    "longterm=chat",
    "agent_id=chat",
)
UPDATE_COLUMNS = (
    "set",
    "questions",
    "newer at 1",
    "older at 1",
    "newer above older",
    f"newer not in top {UPDATE_DEPTH}",
)
MISFIRE_COLUMNS = ("set", "questions", "answer at 1", "decoy above the answer")


def runs(name: str, seeds: Iterable[int]) -> list[tuple[str, list[str]]]:
    """(run folder name, overrides) of each run a set takes."""
    if name == SYNTHETIC:
        return [(f"{SYNTHETIC}_{seed}", [*SYNTHETIC_OVERRIDES, f"dataset.seed={seed}"]) for seed in seeds]
    path = f"{SETS}/{LOCOMO_SETS[name]}"
    return [(name, ["dataset=locomo", f"dataset.path={path}", "longterm=locomo"])]


def probe_records(name: str, seeds: Iterable[int], overrides: Sequence[str], out: Path) -> list[ProbeRecord]:
    """Every probe record of the set's runs, pooled."""
    pooled: list[ProbeRecord] = []
    for folder, own in runs(name, seeds):
        result = api.run([*own, *overrides], out / folder)
        pooled += [r for r in result.records if isinstance(r, ProbeRecord)]
    return pooled


def _count(metrics: dict[str, float], share: str, total: str) -> str:
    n = int(metrics.get(total, 0))
    if not n:
        return "-"
    k = round(metrics[share] * n)
    return f"{k} / {n} ({k / n:.1%})"


def update_row(name: str, probes: list[ProbeRecord]) -> list[str]:
    m = update_rank_metrics(probes) | newer_first_metrics(probes)
    return [
        name,
        f"{int(m.get('longterm.update_probes', 0))}",
        _count(m, "longterm.newer@1", "longterm.update_probes"),
        _count(m, "longterm.older@1", "longterm.update_probes"),
        _count(m, "longterm.newer_first", "longterm.newer_first.probes"),
        _count(m, f"longterm.newer_missed@{UPDATE_DEPTH}", "longterm.update_probes"),
    ]


def misfire_row(name: str, probes: list[ProbeRecord]) -> list[str]:
    m = decoy_metrics(probes)
    return [
        name,
        f"{int(m.get('longterm.decoy_probes', 0))}",
        _count(m, "longterm.decoy_answer@1", "longterm.decoy_probes"),
        _count(m, "longterm.decoy_above", "longterm.decoy_probes"),
    ]


def table(columns: Sequence[str], rows: list[list[str]]) -> str:
    lines = [columns, ["---"] * len(columns), *rows]
    return "\n".join(f"| {' | '.join(line)} |" for line in lines)


def _seeds(text: str) -> range:
    first, _, last = text.partition("-")
    if not first.isdigit() or not (last or first).isdigit() or int(last or first) < int(first):
        raise argparse.ArgumentTypeError(f"{text!r}: expected FIRST-LAST with FIRST <= LAST, e.g. 21-40")
    return range(int(first), int(last or first) + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    names = [*LOCOMO_SETS, SYNTHETIC]
    parser.add_argument("--sets", default=",".join(names), help=f"comma-separated, of {', '.join(names)}")
    parser.add_argument("--seeds", type=_seeds, default=SYNTHETIC_SEEDS, help="the synthetic seeds, FIRST-LAST")
    parser.add_argument("--runs", type=Path, default=Path("reports/updates") / datetime.now().strftime("%Y%m%d-%H%M%S"))
    parser.add_argument("overrides", nargs="*", help="Hydra overrides for every run")
    args = parser.parse_args()
    chosen = args.sets.split(",")
    if unknown := [s for s in chosen if s not in names]:
        parser.error(f"--sets: no set {unknown[0]!r}; expected some of {', '.join(names)}")
    rows: dict[str, list[list[str]]] = {"update": [], "misfire": []}
    for name in chosen:
        probes = probe_records(name, args.seeds, args.overrides, args.runs)
        kind, row = ("misfire", misfire_row) if name.startswith("misfire") else ("update", update_row)
        label = f"{SYNTHETIC} seeds {args.seeds.start}-{args.seeds.stop - 1}" if name == SYNTHETIC else name
        rows[kind].append(row(label, probes))
    for columns, kind in ((UPDATE_COLUMNS, "update"), (MISFIRE_COLUMNS, "misfire")):
        if rows[kind]:
            print(table(columns, rows[kind]), end="\n\n")
    print(f"runs in {args.runs}")


if __name__ == "__main__":
    main()
