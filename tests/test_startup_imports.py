"""Starting memlab imports no heavy library it does not use yet (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys

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
