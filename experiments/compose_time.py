"""CPU of N composes of memlab's `config` in one process, and a digest of the configs they compose.

python experiments/compose_time.py [N]

Composes nine override sets in turn (after one untimed compose of each) and prints the CPU seconds of N
composes and the sha256 of their YAML (`OmegaConf.to_yaml`, with and without the `hydra` node, whose
`config_sources` is left out: it names the config sources' schemes). Run from one folder with two checkouts'
interpreters, alternating, for a before/after at the same load: equal digests, equal configs.
"""

from __future__ import annotations

import argparse
import hashlib
import time

from hydra import compose, initialize_config_module
from omegaconf import OmegaConf
from script_args import positive

from memlab import config

OVERRIDES = [
    [],
    ["context=trim"],
    ["context=sliding_window", "context.max_tokens=2000"],
    ["memory=summarize"],
    ["debug=default"],
    ["seed=3"],
    ["experiment=demo"],
    ["longterm=locomo"],
    ["+hooks@hooks.summarization=summarization"],
]


def main(n: int) -> None:
    config.register()
    digest = hashlib.sha256()
    with initialize_config_module(config_module="memlab.conf", version_base=None):
        for overrides in OVERRIDES:
            digest.update(OmegaConf.to_yaml(compose(config_name="config", overrides=overrides)).encode())
            cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
            del cfg.hydra.runtime.config_sources
            digest.update(OmegaConf.to_yaml(cfg, resolve=False).encode())
        start = time.process_time()
        for i in range(n):
            compose(config_name="config", overrides=OVERRIDES[i % len(OVERRIDES)])
        spent = time.process_time() - start
    print(f"{n} composes: {spent:.2f} CPU s, {1000 * spent / n:.1f} ms each; configs sha256 {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=positive, default=45, help="composes timed (default 45)")
    main(parser.parse_args().n)
