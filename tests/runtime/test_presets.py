"""Every preset of the configuration matrix (conf/experiment/*.yaml, second document section 11) composes and runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.experiment import run_experiment
from memlab.memory import ChainCompressor, HybridMemoryCompressor, WindowedMemoryCompressor

PRESETS = {
    "faq_support": (WindowedMemoryCompressor, "dataset.max_dialogues=3"),
    "tickets": (HybridMemoryCompressor, "dataset.max_dialogues=3"),
    "codeact": (ChainCompressor, "dataset.max_dialogues=3"),
    "research": (ChainCompressor, "dataset.sample_ids=[conv-26]"),
}


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_each_preset_runs_on_its_data(make_config, preset: str, tmp_path: Path, locomo_path, tau_bench_path) -> None:
    kind, subset = PRESETS[preset]
    data = locomo_path if preset == "research" else tau_bench_path
    cfg = make_config(f"experiment={preset}", f"dataset.path={data}", subset)
    assert cfg.name == preset
    result = run_experiment(cfg, tmp_path / preset)
    compressions = [e for r in result.records for e in r.events if e.kind == "MEMORY_COMPRESS"]
    assert result.metrics["calls"] > 0 and compressions
    assert {e.data["compressor"] for e in compressions} == {kind.__name__}
