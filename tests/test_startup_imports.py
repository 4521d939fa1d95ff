"""Starting memlab imports no heavy library it does not use yet (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from memlab import cli

HEAVY = ("scipy", "sklearn", "pandas", "matplotlib", "litellm", "faiss", "sqlalchemy", "torch", "sentence_transformers")

_PROBE = """
import json, sys
from memlab import cli, config
config.register()
try:
    cli.main(["run", "--help"])
except SystemExit:
    pass
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def test_run_help_imports_no_heavy_library() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out.splitlines()[-1]))
    assert "memlab" in loaded and "hydra" in loaded  # the probe did start memlab
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


def test_the_experiment_module_loads_no_report_library() -> None:
    """pandas and matplotlib come with the report code, imported when a run is measured and written."""
    probe = "import json, sys, memlab.experiment; print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out.splitlines()[-1]))
    assert "memlab" in loaded and loaded.isdisjoint({"pandas", "matplotlib"}), sorted(loaded & {"pandas", "matplotlib"})


_TINY_RUN = """
import json, sys
import tiktoken, tiktoken.load
from hydra._internal.hydra import Hydra
from memlab import cli, config
from memlab.dialogues import synthetic

parsed = []
parse = tiktoken.load.load_tiktoken_bpe


def parse_counted(*args, **kwargs):
    parsed.append(args[0])
    return parse(*args, **kwargs)


tiktoken.load.load_tiktoken_bpe = parse_counted
generated = []
dialogue = synthetic._dialogue


def dialogue_counted(rng, writer, k, *args):
    generated.append(k)
    return dialogue(rng, writer, k, *args)


synthetic._dialogue = dialogue_counted

built = []
init = tiktoken.Encoding.__init__


def counted(self, name, *args, **kwargs):
    built.append(name)
    init(self, name, *args, **kwargs)


tiktoken.Encoding.__init__ = counted
composed = []
compose = Hydra.compose_config


def compose_counted(self, *args, **kwargs):
    composed.append(kwargs.get("run_mode"))
    return compose(self, *args, **kwargs)


Hydra.compose_config = compose_counted
try:
    cli.main(["run", "debug=default", "output_dir=run"])
except SystemExit as e:
    assert not e.code, e.code
modules = sorted({m.split(".")[0] for m in sys.modules})
schemas = config._structured.cache_info().currsize
print(json.dumps({"encodings": built, "modules": modules, "composed": len(composed), "parsed": parsed,
                  "generated": generated, "schemas": schemas, "of": len(config.schemas())}))
"""

_LOAD_O200K = "from memlab.tokens import load_encoding; load_encoding('o200k_base')"


def test_a_tiny_run_loads_one_encoding_and_no_plotting(tmp_path: Path) -> None:
    """debug=default: the run's tokenizer is the only encoding built (the latency reference workload shares it),
    its ranks read from memlab's cache (an earlier process parsed them: memlab.bpe_cache), the config is composed
    once (no mode probe) from the few entry schemas it names (`config.LazySchema`), the synthetic generator makes
    the one dialogue the run replays, and report.plots=false leaves matplotlib unimported; the report says the
    figures were not drawn. pandas is not imported: a run's tables and reports are plain rows
    (`memlab.report.table`), its means numpy's (`memlab.metrics.mean_by_category`)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    subprocess.run([sys.executable, "-c", _LOAD_O200K], check=True, env=env)
    done = subprocess.run([sys.executable, "-c", _TINY_RUN], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["encodings"] == ["o200k_base"]
    assert seen["parsed"] == []
    assert seen["generated"] == [0]
    assert 0 < seen["schemas"] <= 15 < seen["of"], seen
    assert seen["composed"] == 1
    assert "matplotlib" not in seen["modules"]
    assert "pandas" not in seen["modules"]
    assert "report.plots=false" in (tmp_path / "run" / "report.html").read_text(encoding="utf-8")


def test_only_known_single_runs_skip_hydras_mode_probe() -> None:
    """Skipped only where nothing can set hydra.mode: a preset sweep (experiment=demo) still sweeps without -m."""
    assert cli._known_single_run(["debug=default", "context=trim", "context.max_tokens=500", "+hooks@hooks.s=sessions"])
    for args in (
        ["experiment=demo"],
        ["+experiment=demo"],
        ["hparams_search=window_budget"],
        ["hydra.mode=MULTIRUN"],
        ["hydra/launcher=joblib"],
        ["-m", "context=trim"],
        ["--config-dir", "/elsewhere"],
    ):
        assert not cli._known_single_run(args), args


def test_no_debug_entry_sets_hydras_keys() -> None:
    """debug entries are global (`# @package _global_`) and skip the mode probe: none may set hydra.*."""
    from memlab.completion import conf_dir

    for entry in (conf_dir() / "debug").glob("*.yaml"):
        assert "hydra" not in (yaml.safe_load(entry.read_text(encoding="utf-8")) or {}), entry


def test_the_test_session_keeps_out_of_the_users_cache(_memlab_cache: Path, make_config) -> None:
    """tests/conftest.py points the whole session (subprocesses too) at a temporary folder: tiktoken's parsed ranks
    and the configs' response caches."""
    assert Path(tempfile.gettempdir()) in _memlab_cache.parents
    probe = "from memlab import bpe_cache; print(bpe_cache.tables_dir())"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(_memlab_cache / "tiktoken")
    assert make_config("llm=litellm").llm.cache_dir == str(_memlab_cache / "llm")
