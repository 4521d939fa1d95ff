"""`memlab ablate` on a real slice of LoCoMo: its table against each run's metrics.json, and its errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from memlab.ablate import ablate_config, compose_runs, plans, run_ablation, split_overrides
from memlab.errors import MemlabError
from memlab.metrics import paired_bootstrap
from memlab.report.ablation import AblationVariant, ablation_markdown, ablation_table, question_scores

ROOT = Path(__file__).resolve().parents[2]
SLICE = ["dataset.sample_ids=[conv-26]", "sim.max_sessions=6", "sim.workers=1"]
VARIANTS = "ablate.select=[no_feedback,no_dense]"


# One worker runs this module under `--dist loadgroup`: `ablation` is built once, not once per worker.
pytestmark = pytest.mark.xdist_group("ablation")


@pytest.fixture(scope="module")
def ablation(tmp_path_factory: pytest.TempPathFactory, locomo_path: Path) -> Path:
    """One ablation of two variants over the first six sessions of conv-26, run through the CLI."""
    from memlab.cli import main

    out = tmp_path_factory.mktemp("ablation")
    args = [
        "ablate",
        *SLICE,
        f"dataset.path={locomo_path}",
        VARIANTS,
        "ablate.resamples=2000",
        f"ablate.output_dir={out}",
    ]
    with pytest.raises(SystemExit) as done:
        main(args)
    assert done.value.code == 0
    return out


def _rows(out: Path) -> dict[str, dict[str, object]]:
    return {r["variant"]: r for r in json.loads((out / "ablation.json").read_text())["rows"]}


def test_each_variant_mean_is_its_runs_metrics_json(ablation: Path) -> None:
    rows = _rows(ablation)
    assert list(rows) == ["full", "no_feedback", "no_dense"]
    for name, row in rows.items():
        metrics = json.loads((ablation / "runs" / name / "metrics.json").read_text())
        assert row["questions"] == metrics["longterm.questions"] > 0
        for m in ("recall@1", "recall@5", "recall@10", "ndcg@10"):
            assert row[m] == pytest.approx(metrics[f"longterm.{m}"], abs=5e-7), (name, m)  # metrics.json: 6 places
    assert rows["no_feedback"]["overrides"] == "longterm.rerank=[decay,revisions,dedup]"  # derived from the list
    manifest = json.loads((ablation / "runs" / "no_dense" / "manifest.json").read_text())
    assert "longterm.index.dense_weight=0" in manifest["overrides"]


def test_differences_are_variant_minus_full_inside_their_interval(ablation: Path) -> None:
    rows = _rows(ablation)
    full = rows["full"]
    assert full["recall@10.diff"] is None
    for name in ("no_feedback", "no_dense"):
        row = rows[name]
        for m in ("recall@1", "recall@5", "recall@10", "ndcg@10"):
            diff = row[f"{m}.diff"]
            assert diff == pytest.approx(row[m] - full[m], abs=1e-12)
            assert row[f"{m}.low"] <= diff <= row[f"{m}.high"]
    # Turning feedback off moves some question's recall: the table is not all zeros.
    assert any(rows["no_feedback"][f"{m}.diff"] != 0 for m in ("recall@1", "recall@5", "recall@10", "ndcg@10"))


def test_the_markdown_and_csv_carry_the_same_rows(ablation: Path) -> None:
    md = (ablation / "ablation.md").read_text()
    assert md.splitlines()[0].startswith("| variant | overrides | questions | recall@1 | Δ recall@1 [95% CI] |")
    assert len(md.splitlines()) == 2 + 3
    csv = pd.read_csv(ablation / "ablation.csv")
    assert list(csv["variant"]) == ["full", "no_feedback", "no_dense"]
    rows = _rows(ablation)
    assert csv.loc[1, "recall@10.high"] == pytest.approx(rows["no_feedback"]["recall@10.high"], abs=1e-6)
    settings = json.loads((ablation / "ablation.json").read_text())["settings"]
    assert settings["resamples"] == 2000 and "longterm=locomo" in settings["run_overrides"]


def test_table_from_hand_made_scores_matches_a_direct_bootstrap() -> None:
    index = pd.MultiIndex.from_tuples([("d", f"q{i}") for i in range(40)], names=["dialogue", "qid"])
    rng = np.random.default_rng(0)
    full = pd.DataFrame({"recall@1": rng.random(40) > 0.5, "recall@10": rng.random(40) > 0.2}, index=index) * 1.0
    off = full.copy()
    off.iloc[:8, 0] = 0.0  # the variant loses recall@1 on eight questions
    table = ablation_table(
        AblationVariant("full", (), full),
        [AblationVariant("off", ("x=1",), off)],
        ["recall@1", "recall@10"],
        resamples=1_000,
        seed=4,
    )
    ci = paired_bootstrap(off.to_numpy(), full.to_numpy(), resamples=1_000, seed=4)
    row = table.iloc[1]
    assert (row["recall@1.diff"], row["recall@1.low"], row["recall@1.high"]) == (ci[0].mean, ci[0].low, ci[0].high)
    assert row["recall@10.diff"] == 0.0
    md = ablation_markdown(table, ["recall@1", "recall@10"])
    assert "**" in md.splitlines()[3].split("|")[5]  # recall@1's loss leaves out zero: in bold
    with pytest.raises(MemlabError, match="other questions"):
        ablation_table(AblationVariant("full", (), full), [AblationVariant("cut", (), off.iloc[1:])], ["recall@1"])


def test_split_keeps_hydra_signs() -> None:
    assert split_overrides(["+ablate.variants.x=[a=1]", "~ablate.seed", "seed=3"]) == (
        ["+variants.x=[a=1]", "~seed"],
        ["seed=3"],
    )


def test_unknown_variant_override_fails_before_any_run(tmp_path: Path, shared_corpora: Path) -> None:
    cfg = ablate_config(['+variants.typo=["longterm.index.dense_weigth=0"]', f"output_dir={tmp_path / 'out'}"])
    with pytest.raises(MemlabError, match=r"ablate variant 'typo' .*dense_weigth.*dense_weight"):
        compose_runs(cfg)
    with pytest.raises(MemlabError, match="ablate variant 'typo'"):
        typo = '+ablate.variants.typo=["longterm.index.dense_weigth=0"]'
        run_ablation([typo, f"ablate.output_dir={tmp_path / 'out'}"])
    with pytest.raises(MemlabError, match="quoted"):
        run_ablation(["+ablate.variants.typo=[longterm.index.dense_weight=0]"])
    with pytest.raises(
        MemlabError,
        match=r"ablate\.select: no variant nope; variants: no_feedback, no_decay, no_revisions, no_dedup, no_dense",
    ):
        run_ablation(["ablate.select=[nope]"])
    assert not (tmp_path / "out").exists()


def test_default_variants_are_one_switch_each() -> None:
    cfg = ablate_config()
    runs = plans(cfg)
    assert next(iter(runs)) == "full" and len(runs) == len(cfg.variants) + 1
    assert all(len(o) == len(runs["full"]) + 1 for o in list(runs.values())[1:])


def test_stage_variants_leave_out_one_entry_of_the_listed_stages(shared_corpora: Path) -> None:
    """Derived from the full pipeline's list itself: every entry but one, in order."""
    cfg = ablate_config(["stages=eval.overall_excludes", "select=[no_adversarial,no_temporal]"])
    runs = compose_runs(cfg, ["eval.overall_excludes=[adversarial,temporal]"])
    assert list(runs) == ["full", "no_adversarial", "no_temporal"]
    assert runs["no_adversarial"][0][-1] == "eval.overall_excludes=[temporal]"
    assert list(runs["no_temporal"][1].eval.overall_excludes) == ["adversarial"]
    # The shipped default: one variant per stage of longterm.rerank, each the full list without it.
    runs = compose_runs(ablate_config(["select=[no_feedback,no_dedup]"]))
    full = list(runs["full"][1].longterm.rerank)
    assert len(full) > 2 and full[0] == "feedback"
    assert list(runs["no_feedback"][1].longterm.rerank) == full[1:]
    assert list(runs["no_dedup"][1].longterm.rerank) == [s for s in full if s != "dedup"]
    with pytest.raises(MemlabError, match="no list there"):
        compose_runs(ablate_config(["stages=eval.nope"]))


def test_no_longterm_or_no_questions_is_a_clear_error(shared_corpora: Path) -> None:
    cfg = ablate_config()
    with pytest.raises(MemlabError, match="needs long-term memory: set longterm="):
        compose_runs(cfg, ["longterm=none"])
    with pytest.raises(MemlabError, match="no question with evidence"):
        compose_runs(cfg, ["dataset=jsonl", f"dataset.path={ROOT / 'datasets' / 'sample.jsonl'}"])


def test_unknown_metric_is_refused(tmp_path: Path) -> None:
    with pytest.raises(MemlabError, match="recall@K"):
        question_scores(tmp_path, ["precision@3"])
    assert question_scores(tmp_path).empty  # a folder without retrievals.jsonl scores nothing


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("ablate.metrics=[precision@3]", "ablate.metrics: 'precision@3'; expected recall@K (K >= 1) or ndcg@10"),
        ("ablate.metrics=[]", "ablate.metrics is empty; expected some of recall@K (K >= 1) and ndcg@10"),
        ("sim.stop_after_session=1", "ablate compares whole runs: sim.stop_after_session and sim.resume are for"),
        ("ablate.seed=-1", "ablate.seed=-1 is out of range"),  # its own keys named as written, not seed=-1
        ("+ablate.variants.x=1", "Error merging override +ablate.variants.x=1: Invalid value assigned"),
    ],
)
def test_a_setting_no_ablation_can_use_fails_before_any_run(
    tmp_path: Path, locomo_path: Path, capsys: pytest.CaptureFixture[str], memlab_cli: Callable[..., int], setting, said
) -> None:
    """A metric it cannot score was a ValueError traceback after every run; no metric, or a stopped run, claimed
    "the full run scored no long-term question"."""
    out = tmp_path / "out"
    capsys.readouterr()
    assert memlab_cli("ablate", *SLICE, f"dataset.path={locomo_path}", setting, f"ablate.output_dir={out}") == 2
    err = capsys.readouterr().err
    assert err.startswith(f"memlab: error: {said}") and err.count("\n") == 1, err
    assert not out.exists()


def test_a_failed_ablation_leaves_no_folder_of_runs_without_their_table(
    tmp_path: Path, locomo_path: Path, capsys: pytest.CaptureFixture[str], memlab_cli: Callable[..., int]
) -> None:
    """A variant whose override changes the data fails after both runs: one line (was a ValueError traceback), and
    the runs it made are removed with the folder (half-written ablation folders were left, runs/ and no table)."""
    out = tmp_path / "out"
    variant = ["ablate.select=[fewer]", '+ablate.variants.fewer=["sim.max_sessions=1"]']
    args = ("ablate", "dataset.sample_ids=[conv-26]", "sim.max_sessions=2", f"dataset.path={locomo_path}", *variant)
    capsys.readouterr()
    assert memlab_cli(*args, f"ablate.output_dir={out}") == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("memlab: error: ablate: variant 'fewer' answered other questions than 'full'"), err
    assert not out.exists()


def test_a_reused_output_folder_holds_only_the_runs_of_its_table(
    tmp_path: Path, locomo_path: Path, memlab_cli: Callable[..., int]
) -> None:
    """A variant of an earlier ablation into the same ablate.output_dir was left in runs/, beside the new table."""
    out = tmp_path / "out"
    (out / "runs" / "no_decay").mkdir(parents=True)
    (out / "runs" / "no_decay" / "metrics.json").write_text("{}")
    args = ("dataset.sample_ids=[conv-26]", "sim.max_sessions=2", f"dataset.path={locomo_path}")
    assert memlab_cli("ablate", *args, "ablate.select=[no_dense]", f"ablate.output_dir={out}") == 0
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["full", "no_dense"]
    assert list(_rows(out)) == ["full", "no_dense"]


def test_cli_help(capsys: pytest.CaptureFixture[str], memlab_cli: Callable[..., int]) -> None:
    assert memlab_cli("ablate", "--help") == 0
    assert "paired bootstrap" in capsys.readouterr().out
