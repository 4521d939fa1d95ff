"""Every figure README.md and docs/*.md quote equals its results file in docs/figures/ (`make figures` writes both).

The check never re-runs an experiment: it compares the quoted text with the file's value in the marker's format
(`memlab.report.figures`), so it is as fast for a timing as for a token count.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

from memlab.report.figures import CODE, MARKER, RESULTS_DIR, check_docs, docs, load_results, quotes, rewrite_docs

ROOT = Path(__file__).resolve().parents[1]
# The docs that quote figures memlab measures, and how many marked figures each holds at least.
COVERED = {
    "README.md": 45,
    "docs/evaluation.md": 140,
    "docs/memory.md": 90,
    "docs/backends.md": 40,
    "docs/context.md": 40,
}


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of the docs and their results files, to edit."""
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    return tmp_path


def test_every_quoted_figure_equals_its_results_file() -> None:
    stale = check_docs(ROOT)
    assert not stale, "quoted figures differ from docs/figures/ (run `make figures`):\n" + "\n".join(map(str, stale))


def test_the_docs_that_quote_measured_figures_mark_them() -> None:
    results = load_results(ROOT)
    counts = {str(d.relative_to(ROOT)): len(quotes(d.name, d.read_text("utf-8"), results)) for d in docs(ROOT)}
    assert {doc: counts[doc] for doc, least in COVERED.items() if counts[doc] < least} == {}


@pytest.mark.parametrize("doc", list(COVERED))
def test_editing_a_quoted_figure_fails_naming_file_line_marker_and_both_values(checkout: Path, doc: str) -> None:
    path = checkout / doc
    text = path.read_text(encoding="utf-8")
    first = next(m for m in MARKER.finditer(text) if m["source"] != "SOURCE")  # README shows the syntax first
    edited = first["quoted"] + "1"
    start, end = first.span("quoted")
    path.write_text(text[:start] + edited + text[end:], encoding="utf-8")

    [stale] = check_docs(checkout)
    line = text.count("\n", 0, first.start()) + 1
    assert (stale.doc, stale.line, stale.marker) == (doc, line, f"{first['source']}:{first['key']}")
    assert (stale.quoted, stale.expected) == (edited, first["quoted"])
    assert str(stale) == f"{doc}:{line}: fig {stale.marker}: quoted {edited!r}, expected {first['quoted']!r}"

    assert [q.quoted for q in rewrite_docs(checkout)] == [edited]
    assert path.read_text(encoding="utf-8") == text and check_docs(checkout) == []


def test_a_changed_results_file_fails_every_figure_it_moves(checkout: Path) -> None:
    path = checkout / RESULTS_DIR / "demo.json"
    results = json.loads(path.read_text(encoding="utf-8"))
    results["runs"]["trim"]["metrics"]["tokens.prompt.mean"] += 100
    path.write_text(json.dumps(results), encoding="utf-8")
    stale = check_docs(checkout)
    assert stale and {q.marker for q in stale} == {"demo:trim/tokens.prompt.mean"}
    assert {q.doc for q in stale} >= {"README.md", "docs/evaluation.md"}


def test_a_broken_or_unknown_marker_is_reported(tmp_path: Path) -> None:
    shutil.copytree(ROOT / RESULTS_DIR, tmp_path / RESULTS_DIR)
    broken = "x <!-- fig demo:trim/no.such.metric {:.1f} -->1.0<!-- /fig --> y <!-- fig demo:trim 1 -->\n"
    (tmp_path / "README.md").write_text("# title\n\n" + broken, encoding="utf-8")
    stale = check_docs(tmp_path)
    assert [(q.line, q.marker) for q in stale] == [(3, "?:?"), (3, "demo:trim/no.such.metric")]
    assert stale[1].expected == f"<no figure 'trim/no.such.metric' in {RESULTS_DIR / 'demo'}.json>"
    assert rewrite_docs(tmp_path) == stale and (tmp_path / "README.md").read_text("utf-8").endswith(broken)


def test_markers_render_invisibly() -> None:
    """A marker in a code span or a fenced block would show on GitHub (and is not read); elsewhere it shows nothing."""
    for doc in docs(ROOT):
        text = doc.read_text(encoding="utf-8")
        code = [range(*m.span()) for m in CODE.finditer(text)]
        for m in MARKER.finditer(text):
            where = f"{doc.name}:{text.count(chr(10), 0, m.start()) + 1}"
            shown = any(m.start() in span for span in code)
            assert not shown or m["source"] == "SOURCE", f"{where}: a marker in code"  # README shows the syntax


def test_results_files_say_how_they_were_made() -> None:
    for name, results in load_results(ROOT).items():
        if name in ("recorded", "external"):  # written by hand: each value names what measured or published it
            assert all({"value", "source"} <= v.keys() for v in results["values"].values()), name
            continue
        assert results["command"] == f"python experiments/figures.py {name}"
        assert re.fullmatch(r"[0-9a-f]{40}", results["commit"]) and isinstance(results["dirty"], bool)
        assert all(r["command"].startswith("memlab run ") for r in results["runs"].values())


def test_a_source_records_what_a_real_run_wrote(tmp_path: Path) -> None:
    """experiments/figures.py keeps a run's `metrics.json` whole, beside the `memlab run` line that reproduces it."""
    spec = importlib.util.spec_from_file_location("figures_script", ROOT / "experiments" / "figures.py")
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    recorded = script.run(tmp_path, "tiny", ["debug=default", "context=trim"])
    assert recorded["command"] == "memlab run debug=default context=trim"
    assert recorded["metrics"] == json.loads((tmp_path / "tiny" / "metrics.json").read_text(encoding="utf-8"))
    with (tmp_path / "tiny" / "calls.csv").open(encoding="utf-8") as f:
        kept = [int(row["messages_kept"]) for row in csv.DictReader(f)]
    assert recorded["messages_kept.mean"] == round(sum(kept) / len(kept), 6) and recorded["timing"]["wall_s"] > 0
