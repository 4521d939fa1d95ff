"""A run's tables are written without pandas (pandas is the oracle here): the CSV byte for byte as pandas wrote it,
the Markdown with pandas' cells (compared stripped of their padding) under an alignment row of its own."""

from __future__ import annotations

import io
import math
import random

import numpy as np
import pandas as pd
import pytest

from memlab.metrics import mean_by_category
from memlab.report.table import Table

# The cells a run's rows hold: counts, shares, undefined metrics, text with the characters csv quotes, flags.
CELLS = [0, 7, 1234, 0.5, 1 / 3, 1e-05, 2.5e16, -0.0, None, math.nan, "", "a,b", 'say "hi"', "two\nlines", True, False]


def _records(rng: random.Random, n: int) -> list[dict[str, object]]:
    """Rows whose columns each draw from a few kinds of cell, some rows lacking a key (pandas fills NaN)."""
    kinds = {f"c{i}": rng.sample(CELLS, rng.randint(1, 3)) for i in range(6)}
    return [{c: rng.choice(kind) for c, kind in kinds.items() if rng.random() < 0.9} for _ in range(n)]


def _pandas_csv(frame: pd.DataFrame) -> str:
    buf = io.StringIO()
    frame.to_csv(buf, index=False)
    return buf.getvalue()


@pytest.mark.parametrize("seed", range(40))
def test_csv_is_pandas_bytes_and_markdown_pandas_cells(seed: int) -> None:
    rng = random.Random(seed)
    records = _records(rng, rng.randint(0, 6))
    frame, table = pd.DataFrame(records), Table.from_records(records)
    assert table.columns == tuple(frame.columns)
    assert table.to_csv() == _pandas_csv(frame)
    text = [{k: str(v) for k, v in r.items()} for r in records]  # reports show formatted cells
    if text and text[0]:
        ours = Table.from_records(text).to_markdown().splitlines()
        theirs = pd.DataFrame(text).to_markdown(index=False, disable_numparse=True).splitlines()
        del ours[1], theirs[1]  # the alignment row: numbers right-aligned (`markdown`)
        assert [_cells(line) for line in ours] == [_cells(line) for line in theirs]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip("|").split("|")]


@pytest.mark.parametrize(
    ("cells", "alignment"),
    [
        (["1,849", "591.0"], "|:---------|--------:|"),  # numbers right-aligned, as tabulate aligned them
        (["$0.0751"], "|:---------|--------:|"),
        (["13.5%"], "|:---------|--------:|"),
        (["—", "1,849"], "|:---------|--------:|"),  # a gap among numbers
        (["—", "—"], "|:---------|:--------|"),  # gaps only: text
    ],
)
def test_markdown_shows_formatted_numbers_as_formatted(cells: list[str], alignment: str) -> None:
    """The defect: tabulate re-parsed the reports' text ("1,849" showed as 1849, "591.0" as 591)."""
    table = Table.from_records([{"metric": f"m{i}", "value": cell} for i, cell in enumerate(cells)])
    lines = table.to_markdown().splitlines()
    assert lines[1] == alignment
    assert [_cells(line) for line in lines[2:]] == [[f"m{i}", cell] for i, cell in enumerate(cells)]


def test_named_columns_and_an_empty_table() -> None:
    columns = ("stage", "latency_us")
    assert Table.from_records([], columns).to_csv() == _pandas_csv(pd.DataFrame([], columns=list(columns)))
    assert Table.from_records([]).to_csv() == _pandas_csv(pd.DataFrame([]))
    one = Table.from_records([{"stage": "context", "latency_us": 12}], columns)
    assert one.to_csv() == "stage,latency_us\ncontext,12\n"


def test_counts_with_a_gap_are_floats_as_in_pandas() -> None:
    """An int column with a missing cell is float64 in pandas: its CSV reads 3.0, and so must ours."""
    table = Table.from_records([{"n": 3}, {"m": 1}])
    assert table["n"][0] == 3.0 and isinstance(table["n"][0], float) and math.isnan(table["n"][1])
    assert table.to_csv() == "n,m\n3.0,\n,1.0\n"


def test_numpy_numbers_are_numbers() -> None:
    records = [{"n": np.int64(3), "x": np.float64(0.25), "b": np.bool_(True)}, {"n": None, "x": 1, "b": False}]
    assert Table.from_records(records).to_csv() == _pandas_csv(pd.DataFrame(records))


def test_a_table_round_trips_through_a_frame() -> None:
    records = [{"a": 1, "b": 0.5, "c": "x"}, {"a": 2, "b": None, "c": None}]
    table = Table.from_records(records)
    assert Table.from_frame(table.frame()).to_csv() == table.to_csv()
    assert table.frame().dtypes.tolist() == pd.DataFrame(records).dtypes.tolist()


def _pandas_means(rows: list[dict[str, object]], names: list[str], excluded: list[str]) -> dict[str, float | None]:
    """mean_by_category as it was written with pandas (the oracle)."""

    def mean(values: pd.Series) -> float | None:
        values = values.dropna()
        return float(values.mean()) if len(values) else None

    frame = pd.DataFrame(rows, columns=["category", *names])
    counted = ~frame["category"].astype(str).isin(excluded)
    out: dict[str, float | None] = {}
    for name in names:
        values = pd.to_numeric(frame[name], errors="coerce")
        out[name] = mean(values[counted])
        for cat, group in values.groupby(frame["category"].astype(str), sort=True):
            out[f"{name}.cat_{cat}"] = mean(group)
    return out


@pytest.mark.parametrize("seed", range(10))
def test_means_by_category_are_pandas_means(seed: int) -> None:
    """The same floats to the last bit (metrics.json's bytes): numpy's pairwise sum, as Series.mean sums."""
    rng = np.random.default_rng(seed)
    cats = ["1", "2", "3", "4", "adversarial", None]
    rows = []
    for _ in range(int(rng.integers(1, 3000))):
        row: dict[str, object] = {"category": cats[int(rng.integers(len(cats)))]}
        row["x"] = None if rng.random() < 0.2 else float(rng.random())
        row["y"] = int(rng.integers(0, 2)) if rng.random() < 0.9 else None
        rows.append(row)
    mine = mean_by_category(rows, ["x", "y"], excluded=["adversarial"])
    assert list(mine.items()) == list(_pandas_means(rows, ["x", "y"], ["adversarial"]).items())
