"""Start-up cost: a tiny `memlab run` and a completion TAB against `python -c "import hydra, numpy, omegaconf"`.

python experiments/startup_time.py [--rounds N] [--memlab PATH ...]

Each round runs the three commands one after another (so they see the same load) and records each
one's wall time and CPU time (user + sys of the child, `resource.getrusage`); prints the medians and
the ratios to the import line (issue 29: the tiny run within 6x its wall time, a TAB within 0.2 s).
The TAB reads the key tree of `memlab run -sc install=bash`, written first into a temporary cache,
and one untimed tiny run per script first fills that cache as a user's earlier runs would (tiktoken's
parsed ranks, memlab.bpe_cache). `--memlab` given twice (another checkout's script, e.g. a wrapper
that puts it first on PYTHONPATH) times both in each round, alternated: a before/after at the same load.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def timed(cmd: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """(wall s, CPU s) of one run of `cmd`, its output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument(
        "--memlab", action="append", help="the memlab script to time (default: this one's); twice: both, alternated"
    )
    args = parser.parse_args()
    scripts = args.memlab or [str(BIN / "memlab")]
    with tempfile.TemporaryDirectory() as tmp:
        caches = {"XDG_CACHE_HOME": tmp, "MEMLAB_CACHE": tmp}  # the key tree, tiktoken's parsed ranks
        env = {**os.environ, **caches, "HF_HUB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        tab_env = {**env, "COMP_LINE": "memlab run context=trim context."}
        commands = {"import hydra, numpy, omegaconf": ([sys.executable, "-c", "import hydra, numpy, omegaconf"], env)}
        for script in scripts:
            label = "" if len(scripts) == 1 else f" [{script}]"
            tiny = [script, "run", "debug=default", f"output_dir={tmp}/run"]
            subprocess.run([script, "run", "-sc", "install=bash"], env=env, cwd=tmp, check=True, capture_output=True)
            subprocess.run(tiny, env=env, cwd=tmp, check=True, capture_output=True)
            subprocess.run(["rm", "-rf", f"{tmp}/run"], check=True)
            commands[f"memlab run debug=default{label}"] = (tiny, env)
            commands[f"TAB (memlab -sc query=bash){label}"] = ([script, "-sc", "query=bash"], tab_env)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        load = os.getloadavg()[0]
        for _ in range(args.rounds):
            for name, (cmd, cmd_env) in commands.items():
                samples[name].append(timed(cmd, cmd_env, tmp))
                if name.startswith("memlab run"):
                    subprocess.run(["rm", "-rf", f"{tmp}/run"], check=True)
        load = (load + os.getloadavg()[0]) / 2
    base_wall = statistics.median(w for w, _ in samples["import hydra, numpy, omegaconf"])
    base_cpu = statistics.median(c for _, c in samples["import hydra, numpy, omegaconf"])
    print(f"{args.rounds} rounds, load average ~{load:.1f} (start and end)")
    width = max(map(len, samples))
    print(f"{'command':<{width}} {'wall s':>8} {'CPU s':>8} {'wall x':>8} {'CPU x':>8}")
    for name, runs in samples.items():
        wall, cpu = statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)
        print(f"{name:<{width}} {wall:8.3f} {cpu:8.3f} {wall / base_wall:8.2f} {cpu / base_cpu:8.2f}")


if __name__ == "__main__":
    main()
