"""Starting memlab imports no heavy library it does not use yet (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
import tiktoken
from memlab import cli

built = []
init = tiktoken.Encoding.__init__


def counted(self, name, *args, **kwargs):
    built.append(name)
    init(self, name, *args, **kwargs)


tiktoken.Encoding.__init__ = counted
try:
    cli.main(["run", "debug=default", "output_dir=run"])
except SystemExit as e:
    assert not e.code, e.code
print(json.dumps({"encodings": built, "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def test_a_tiny_run_loads_one_encoding_and_no_plotting(tmp_path: Path) -> None:
    """debug=default: the run's tokenizer is the only encoding built (the latency reference workload shares it),
    and report.plots=false leaves matplotlib unimported; the report says the figures were not drawn."""
    done = subprocess.run([sys.executable, "-c", _TINY_RUN], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["encodings"] == ["o200k_base"]
    assert "matplotlib" not in seen["modules"]
    assert "report.plots=false" in (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
