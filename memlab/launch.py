"""The `memlab` command's entry point: a completion TAB is answered without importing the lab (memlab.completion).

Anything else goes to `memlab.cli.main`, which imports Hydra and memlab's config code.
"""

import sys

from memlab import completion


def entry() -> None:
    """`memlab ARGS`: ``-sc query=bash`` (a TAB) from conf/ and the cached key tree, the rest through memlab.cli."""
    args = sys.argv[1:]
    if args[:1] in (["-sc"], ["--shell-completion"]) and completion.answer(args):
        return
    from memlab.cli import main as cli_main

    cli_main()
