"""`python -m memlab.metrics --write docs/evaluation.md`: put the registry's metric table in the docs.

The table (`registry.markdown_table()`) goes between the file's ``<!-- metric-registry:begin -->``
and ``<!-- metric-registry:end -->`` lines, replacing what was there; without ``--write`` it is
printed. tests/metrics/test_registry.py fails, naming this command, while the two differ.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memlab.metrics.registry import markdown_table

BEGIN = "<!-- metric-registry:begin -->"
END = "<!-- metric-registry:end -->"


def with_table(text: str, table: str) -> str:
    """`text` with `table` between its marker lines; ValueError when a marker is missing."""
    head, begin, rest = text.partition(f"{BEGIN}\n")
    _, end, tail = rest.partition(f"\n{END}")
    if not begin or not end:
        raise ValueError(f"the file lacks a {BEGIN} line followed later by a {END} line")
    return f"{head}{begin}{table}{end}{tail}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m memlab.metrics", description="Print the metric table, or --write it into a file."
    )
    parser.add_argument("--write", type=Path, metavar="FILE", help="rewrite the table between FILE's markers")
    args = parser.parse_args(argv)
    if args.write is None:
        print(markdown_table())
        return
    try:
        args.write.write_text(with_table(args.write.read_text(encoding="utf-8"), markdown_table()), encoding="utf-8")
    except (OSError, ValueError) as e:
        sys.exit(f"python -m memlab.metrics: {args.write}: {e}")


if __name__ == "__main__":
    main()
