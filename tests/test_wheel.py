"""The built wheel carries the config tree, experiments included, and composes from where it is installed."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"  # installed as the package memlab.conf


def test_the_wheel_ships_every_config_and_runs_an_experiment_from_the_install(tmp_path: Path) -> None:
    # --no-index and no version check: pip reads nothing from the network, which a CI machine need not reach
    pip = [sys.executable, "-m", "pip", "wheel", "--no-index", "--disable-pip-version-check", "-q"]
    build = [*pip, "--no-deps", "--no-build-isolation", "-w", str(tmp_path)]
    built = subprocess.run([*build, str(ROOT)], check=True, capture_output=True, text=True)
    # every config folder is listed in pyproject.toml: an unlisted one made setuptools print a page of warnings
    # in every `make demo` and `make dev`
    assert "is absent from the `packages` configuration" not in built.stderr
    (wheel,) = tmp_path.glob("memlab-*.whl")
    shipped = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("memlab/conf/")}
    configs = {f"memlab/{p.relative_to(ROOT).as_posix()}" for p in CONF.rglob("*.yaml") if p.parent.name != "local"}
    assert configs - shipped == set() and {"memlab/conf/experiment/ci.yaml", "memlab/conf/config.yaml"} <= shipped
    assert [n for n in shipped if n.endswith(".py")] == ["memlab/conf/__init__.py"]  # configs only, no scripts

    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site)}  # ahead of the editable checkout on sys.path
    script = (
        "import memlab, memlab.cli; print(memlab.__file__); memlab.cli.main(['run', '--cfg', 'job', 'experiment=ci'])"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    where, config = out.stdout.split("\n", 1)
    assert Path(where).is_relative_to(site)
    assert "name: ci" in config and "_target_: memlab.dialogues.generate_synthetic" in config
