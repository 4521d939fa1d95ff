"""Figures quoted in markdown, tied to the results file that holds them, so a quoted number cannot drift.

A figure in README.md or docs/*.md is wrapped in a marker that names its source and its format::

    <!-- fig demo:trim/tokens.prompt.mean {:,.1f} -->461.8<!-- /fig -->

GitHub renders the comments as nothing. ``demo`` is the results file ``docs/figures/demo.json``
(written by ``make figures``); ``trim/tokens.prompt.mean`` is metric ``tokens.prompt.mean`` of its run
``trim`` (a key without ``/`` is one of the file's ``values``: derived, recorded or external figures);
``{:,.1f}`` is the `str.format` template the quoted text must equal. `check_docs` compares every quoted figure
with its file and never re-measures; `rewrite_docs` puts the files' values into the docs.

>>> results = {"runs": {"trim": {"metrics": {"tokens.prompt.mean": 461.83}}}, "values": {}}
>>> text = "sends <!-- fig demo:trim/tokens.prompt.mean {:,.0f} -->470<!-- /fig --> tokens"
>>> [(q.quoted, q.expected) for q in quotes("README.md", text, {"demo": results}) if q.stale]
[('470', '462')]
>>> rewrite_text(text, {"demo": results})
'sends <!-- fig demo:trim/tokens.prompt.mean {:,.0f} -->462<!-- /fig --> tokens'
>>> quotes("README.md", "`<!-- fig demo:trim/x {:.1f} -->1<!-- /fig -->` is shown, not read", {"demo": results})
[]
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CODE",
    "MARKER",
    "RESULTS_DIR",
    "Quote",
    "check_docs",
    "docs",
    "expected_text",
    "load_results",
    "quotes",
    "rewrite_docs",
    "rewrite_text",
    "value_of",
]

RESULTS_DIR = Path("docs") / "figures"
MARKER = re.compile(r"<!-- fig (?P<source>[\w-]+):(?P<key>[^\s]+) (?P<format>\S+) -->(?P<quoted>.*?)<!-- /fig -->")
CODE = re.compile(r"^```.*?^```|`[^`\n]*`", re.S | re.M)  # fenced blocks and code spans: shown, never markers
OPENING = re.compile(r"<!-- ?fig\b")  # every opening, to catch a marker MARKER cannot read


@dataclass(frozen=True)
class Quote:
    """One marked figure: where it is, what it names, what it says and what its results file says."""

    doc: str
    line: int
    source: str
    key: str
    quoted: str
    expected: str

    @property
    def stale(self) -> bool:
        """The quoted text differs from its results file's."""
        return self.quoted != self.expected

    @property
    def marker(self) -> str:
        """The marker's name, `source:key`."""
        return f"{self.source}:{self.key}"

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: fig {self.marker}: quoted {self.quoted!r}, expected {self.expected!r}"


def docs(root: Path) -> list[Path]:
    """The markdown files whose figures are checked: README.md and docs/*.md.

    Args:
        root: the checkout.

    Returns:
        Their paths, README first.
    """
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def load_results(root: Path) -> dict[str, dict[str, Any]]:
    """Every results file under docs/figures/, by source name.

    Args:
        root: the checkout.

    Returns:
        {source: the parsed JSON of docs/figures/<source>.json}.
    """
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted((root / RESULTS_DIR).glob("*.json"))}


def value_of(results: Mapping[str, Any], key: str) -> Any:
    """The figure `key` names in one results file: `run/metric` from a run's record, else a named value.

    Args:
        results: a parsed results file.
        key: `run/name` (a metric of the run's `metrics.json`, else one of its `timing` or other figures) or a
            name in the file's `values`.

    Returns:
        The number (a value recorded with its source, `{"value": ..., ...}`, gives its `value`).

    Raises:
        KeyError: the file has no such figure.
    """
    if "/" in key:
        name, metric = key.split("/", 1)
        run = results["runs"][name]
        for place in (run["metrics"], run.get("timing", {}), run):
            if metric in place:
                return place[metric]
        raise KeyError(key)
    value = results["values"][key]
    return value["value"] if isinstance(value, dict) else value


def expected_text(results: Mapping[str, Mapping[str, Any]], source: str, key: str, template: str) -> str:
    """What a marker must quote: its figure formatted by its template, or why it cannot be found.

    Args:
        results: every results file, by source.
        source: the marker's results file.
        key: the marker's figure in that file.
        template: the marker's `str.format` template.

    Returns:
        The formatted figure, or a `<...>` line saying what is missing (which no quote equals).
    """
    if source not in results:
        return f"<no results file {RESULTS_DIR / source}.json>"
    try:
        value = value_of(results[source], key)
    except KeyError:
        return f"<no figure {key!r} in {RESULTS_DIR / source}.json>"
    if value is None:
        return "<undefined (null) in the results file>"
    return template.format(value)


def _outside_code(text: str) -> str:
    """The text with its code blocks and spans blanked (same length), where a marker is shown, not read."""
    return CODE.sub(lambda m: " " * len(m.group()), text)


def _quotes(doc: str, text: str, results: Mapping[str, Mapping[str, Any]]) -> Iterator[Quote]:
    """Every marker of a document with its quoted and expected text; an unreadable marker quotes itself."""
    prose = _outside_code(text)
    readable = {m.start() for m in MARKER.finditer(prose)}
    for opening in OPENING.finditer(prose):
        if opening.start() not in readable:
            line = text.count("\n", 0, opening.start()) + 1
            snippet = text[opening.start() : opening.start() + 80].split("\n")[0]
            yield Quote(doc, line, "?", "?", snippet, "<!-- fig SOURCE:KEY {FORMAT} -->TEXT<!-- /fig --> on one line")
    for m in MARKER.finditer(prose):
        line = text.count("\n", 0, m.start()) + 1
        expected = expected_text(results, m["source"], m["key"], m["format"])
        yield Quote(doc, line, m["source"], m["key"], m["quoted"], expected)


def quotes(doc: str, text: str, results: Mapping[str, Mapping[str, Any]]) -> list[Quote]:
    """Every marked figure of one document.

    Args:
        doc: the document's name, for the report.
        text: its markdown.
        results: every results file, by source.

    Returns:
        One `Quote` per marker, in order.
    """
    return list(_quotes(doc, text, results))


def check_docs(root: Path) -> list[Quote]:
    """Every marked figure of README.md and docs/*.md that differs from its results file.

    Args:
        root: the checkout.

    Returns:
        The differing quotes (empty when the docs agree with docs/figures/).
    """
    results = load_results(root)
    found = (quotes(str(doc.relative_to(root)), doc.read_text("utf-8"), results) for doc in docs(root))
    return [q for doc_quotes in found for q in doc_quotes if q.stale]


def rewrite_text(text: str, results: Mapping[str, Mapping[str, Any]]) -> str:
    """The markdown with every marker's quoted text replaced by its figure from the results files.

    Args:
        text: the markdown.
        results: every results file, by source.

    Returns:
        The new markdown (markers whose figure is missing are left as they are).
    """

    parts, end = [], 0
    for m in MARKER.finditer(_outside_code(text)):
        expected = expected_text(results, m["source"], m["key"], m["format"])
        quoted = m["quoted"] if expected.startswith("<") else expected
        parts += [text[end : m.start("quoted")], quoted]
        end = m.end("quoted")
    return "".join([*parts, text[end:]])


def rewrite_docs(root: Path) -> list[Quote]:
    """Put the results files' figures into README.md and docs/*.md.

    Args:
        root: the checkout.

    Returns:
        The quotes that changed (as they were before).
    """
    results = load_results(root)
    changed = []
    for doc in docs(root):
        text = doc.read_text(encoding="utf-8")
        stale = [q for q in quotes(str(doc.relative_to(root)), text, results) if q.stale]
        if stale:
            doc.write_text(rewrite_text(text, results), encoding="utf-8")
            changed.extend(stale)
    return changed
