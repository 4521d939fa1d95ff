"""A run's tables as plain rows: the CSV pandas wrote for them and a markdown of the same cells, without pandas.

Importing pandas is ~0.35 CPU s, a seventh of a tiny run. A single run's files (calls.csv, questions.csv,
latency.csv, report.md, report.html) are written from a `Table`: the CSV byte for byte as `pd.DataFrame(records)`
wrote it, each column typed as pandas infers it from Python objects (`typed_column`) and the cells written by the
same `csv` module `DataFrame.to_csv` calls; the markdown by the same `tabulate` that `to_markdown` calls, with its
cells, but each shown as written (no number parsing) and its columns aligned by `markdown`.
Multi-run reports (comparisons, sweeps, figures) still read runs with pandas: `Table.from_frame`, `frame`.

>>> t = Table.from_records([{"a": 1, "b": "x,y"}, {"a": None}])
>>> t.columns, t["a"]
(('a', 'b'), [1.0, nan])
>>> print(t.to_csv(), end="")
a,b
1.0,"x,y"
,
"""

from __future__ import annotations

import csv
import io
import math
import numbers
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memlab.report.fmt import is_missing

if TYPE_CHECKING:
    import pandas as pd


def _is_number(value: Any) -> bool:
    """An int or float, numpy's too (pandas types those as numbers), but not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def typed_column(values: Sequence[Any]) -> list[Any]:
    """`values` as pandas types a column of Python objects (`pd.DataFrame(records)`).

    Numbers with a float or a gap among them are floats, their gaps NaN (pandas' float64); numbers without
    are kept (int64); anything else is kept as it is (pandas' object column: a gap stays None or NaN).
    """
    present = [v for v in values if not is_missing(v)]
    numbers = bool(present) and all(_is_number(v) for v in present)
    if numbers and (len(present) < len(values) or any(isinstance(v, float) for v in present)):
        return [math.nan if is_missing(v) else float(v) for v in values]
    return list(values)


def _csv_cell(value: Any) -> Any:
    """A cell as `DataFrame.to_csv` hands it to `csv`: gaps empty, the rest as they are (csv writes repr(float))."""
    return "" if is_missing(value) else value


@dataclass(frozen=True)
class Table:
    """Named columns and rows of cells (the cells of a column typed as pandas would: `typed_column`)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...] = ()

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None) -> Table:
        """Rows from dicts, as `pd.DataFrame(records, columns=columns)`: columns in order of first appearance."""
        records = list(records)
        if columns is None:
            columns = list(dict.fromkeys(key for record in records for key in record))
        cells = [typed_column([record.get(c, math.nan) for record in records]) for c in columns]
        return cls(tuple(columns), tuple(zip(*cells, strict=True)) if cells else ((),) * len(records))

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> Table:
        """A DataFrame's cells as Python objects (a run read back from its CSV files)."""
        rows = frame.astype(object).itertuples(index=False, name=None)
        return cls(tuple(str(c) for c in frame.columns), tuple(tuple(row) for row in rows))

    def frame(self) -> pd.DataFrame:
        """The table as a DataFrame (multi-run reports and figures)."""
        import pandas as pd

        return pd.DataFrame.from_records(list(self.rows), columns=list(self.columns))

    @property
    def empty(self) -> bool:
        """No rows or no columns (`DataFrame.empty`)."""
        return not self.rows or not self.columns

    def __len__(self) -> int:
        return len(self.rows)

    def __contains__(self, column: object) -> bool:
        return column in self.columns

    def __getitem__(self, column: str) -> list[Any]:
        """One column's cells."""
        i = self.columns.index(column)
        return [row[i] for row in self.rows]

    def records(self) -> Iterator[dict[str, Any]]:
        """Each row as a dict of column to cell."""
        return (dict(zip(self.columns, row, strict=True)) for row in self.rows)

    def select(self, columns: Sequence[str]) -> Table:
        """These columns, in this order."""
        index = [self.columns.index(c) for c in columns]
        return Table(tuple(columns), tuple(tuple(row[i] for i in index) for row in self.rows))

    def to_csv(self) -> str:
        """`DataFrame.to_csv(index=False)`'s text: `csv`'s minimal quoting, "\\n" line ends, gaps empty."""
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(self.columns)
        writer.writerows([_csv_cell(v) for v in row] for row in self.rows)
        return buf.getvalue()

    def to_markdown(self) -> str:
        """A tabulate pipe table of the cells as they are (`markdown`)."""
        return markdown(self.columns, self.rows)


NUMBER_TEXT = re.compile(r"^[-+]?\$?(\d{1,3}(,\d{3})*|\d+)?(\.\d+)?([eE][-+]?\d+)?%?$")


def _numeric(cell: Any) -> bool:
    """A number, or a number as the reports format it ("1,849", "591.0", "$0.0751", "13.5%"), or a gap."""
    text = str(cell)
    return _gap(cell) or _is_number(cell) or bool(NUMBER_TEXT.match(text) and any(map(str.isdigit, text)))


def _gap(cell: Any) -> bool:
    return is_missing(cell) or str(cell) in ("", "—", "nan")


def markdown(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A tabulate pipe table (`DataFrame.to_markdown(index=False)`) showing each cell as written.

    Tabulate re-parses text that looks like a number ("1,849" as 1849, "591.0" as 591): the reports' formatting
    was lost. Its number parsing is off; a column of numbers (formatted or not) is right-aligned as it aligned them.
    """
    from tabulate import tabulate

    body = [list(row) for row in rows]
    align = [
        "right" if all(_numeric(row[i]) for row in body) and not all(_gap(row[i]) for row in body) else "left"
        for i in range(len(columns))
    ]
    return tabulate(body, headers=list(columns), tablefmt="pipe", disable_numparse=True, colalign=align)
