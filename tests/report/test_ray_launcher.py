"""`hydra/launcher=ray` on a Ray cluster started here (`ray start --head`, 2 worker CPUs), as in a real deployment.

The `ray` extra pins cloudpickle<3 (hydra-ray-launcher), which joblib 1.6 does not accept, so it lives in
its own virtualenv: `make ray-env` builds `.venv-ray` (CI does, via .ci/run). The test runs memlab from
that interpreter, or from this one if it has the extra; otherwise it skips, and fails under
MEMLAB_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from simulated_runs import job_dir

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "datasets" / "sample.jsonl"
RAY_VENV = ROOT / ".venv-ray" / "bin"
WORKERS = 2

# One worker under pytest-xdist (--dist loadgroup): the module's cluster ends with `ray stop --force`, which
# stops every Ray node of this user, a second worker's cluster included.
pytestmark = pytest.mark.xdist_group("ray")


def _ray_bin() -> Path:
    """The bin folder of an interpreter that has the ray extra."""
    if importlib.util.find_spec("ray") and importlib.util.find_spec("hydra_plugins.hydra_ray_launcher"):
        return Path(sys.executable).parent
    if (RAY_VENV / "python").is_file():
        return RAY_VENV
    reason = "the ray extra is not installed: `make ray-env` builds .venv-ray"
    if os.environ.get("MEMLAB_REQUIRE_SERVICES") == "1":
        pytest.fail(reason + " (MEMLAB_REQUIRE_SERVICES=1 requires it)")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[Path, str, dict[str, str]]]:
    """A head node with WORKERS CPUs on 127.0.0.1; yields (bin folder, address, environment)."""
    bin_dir = _ray_bin()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CI": "1", "RAY_AUTH_MODE": "disabled"}
    env["RAY_TMPDIR"] = temp = f"/tmp/ray-{uuid.uuid4().hex[:8]}"  # short: Ray's socket paths have a length limit
    port = _free_port()
    start = [
        bin_dir / "ray", "start", "--head", f"--port={port}", f"--num-cpus={WORKERS}", "--include-dashboard=false",
        "--disable-usage-stats", f"--temp-dir={temp}", "--node-ip-address=127.0.0.1",  # loopback only
    ]  # fmt: skip
    done = subprocess.run(start, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    try:
        yield bin_dir, f"127.0.0.1:{port}", env
    finally:
        subprocess.run([bin_dir / "ray", "stop", "--force"], env=env, capture_output=True, timeout=120)


def _memlab(bin_dir: Path, args: list[str], env: dict[str, str], cwd: Path) -> str:
    out = subprocess.run(
        [bin_dir / "python", "-m", "memlab", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1200
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout + out.stderr


def _on(address: str) -> list[str]:
    # hydra-ray-launcher sets object_store_memory, which ray.init refuses when joining a cluster: unset it.
    return [
        "hydra/launcher=ray",
        f"+hydra.launcher.ray.init.address={address}",
        "+hydra.launcher.ray.init.object_store_memory=null",
    ]


def test_ray_sweep_runs_jobs_on_the_cluster_and_marks_failures(cluster, tmp_path: Path) -> None:
    bin_dir, address, env = cluster
    sweep = tmp_path / "ray"
    paths = f"dataset.path={SAMPLE},{tmp_path / 'missing.jsonl'}"
    args = ["run", "-m", *_on(address), "dataset=jsonl", paths, "sweep.allow_failures=true"]  # one job fails
    log = _memlab(bin_dir, [*args, f"hydra.sweep.dir={sweep}"], env, tmp_path)
    assert "Ray Launcher is launching 2 jobs" in log
    assert "Started a local Ray instance" not in log  # it joined the running cluster
    assert json.loads((job_dir(sweep, 0) / "metrics.json").read_text())["calls"] == 4
    assert json.loads((job_dir(sweep, 1) / "error.json").read_text())["type"] == "MissingFileError"
    assert pd.read_csv(sweep / "comparison.csv")["status"].tolist() == ["ok", "failed"]


def test_a_sweep_twice_the_workers_gives_the_basic_launchers_metrics(cluster, locomo_path, tmp_path) -> None:
    """4 LoCoMo jobs on 2 worker CPUs (jobs wait); each metrics.json is byte-identical to the basic launcher's."""
    bin_dir, address, env = cluster
    grid = [
        "context=sliding_window,summarize", "context.max_tokens=1000,4000", "dataset=locomo",
        f"dataset.path={locomo_path}", "debug=default",
    ]  # fmt: skip
    _memlab(bin_dir, ["run", "-m", *_on(address), *grid, f"hydra.sweep.dir={tmp_path / 'ray'}"], env, tmp_path)
    _memlab(bin_dir, ["run", "-m", *grid, f"hydra.sweep.dir={tmp_path / 'basic'}"], env, tmp_path)
    for n in range(2 * WORKERS):
        ray_job, basic_job = job_dir(tmp_path / "ray", n), job_dir(tmp_path / "basic", n)
        assert ray_job.name == basic_job.name
        assert (ray_job / "metrics.json").read_bytes() == (basic_job / "metrics.json").read_bytes(), ray_job.name
