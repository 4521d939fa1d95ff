"""Dates are read and written in English whatever the process's locale: `memlab.dates` is `datetime.strptime` and
``strftime("%d %B %Y")`` of the C locale, and a run in a process set to a German locale scores as the command line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab import dates
from memlab.dialogues.locomo import _DATE_FORMATS
from memlab.dialogues.longmemeval import DATE_FORMAT

ROOT = Path(__file__).resolve().parents[1]
FORMATS = (*_DATE_FORMATS, DATE_FORMAT)
NAMES = [*dates.MONTHS, *(m[:3] for m in dates.MONTHS), *(d[:3] for d in dates.WEEKDAYS), "Sept", "Mayo", "am", "pm"]
# Pieces of dates, right and wrong: numbers in and out of range, names in any case, separators.
PIECE = st.one_of(
    st.integers(0, 2100).map(str),
    st.integers(0, 9).map(lambda n: f"0{n}"),
    st.sampled_from(NAMES).flatmap(lambda n: st.sampled_from([n, n.lower(), n.upper()])),
    st.sampled_from(["on", ":", "/", "(", ")", " ", "  "]),
)


def _strptime(text: str, fmt: str) -> datetime | None:
    try:
        return datetime.strptime(text, fmt)
    except ValueError:
        return None


def _parse(text: str, fmt: str) -> datetime | None:
    try:
        return dates.parse(text, fmt)
    except ValueError:
        return None


@settings(max_examples=400)
@given(pieces=st.lists(PIECE, min_size=1, max_size=12), fmt=st.sampled_from(FORMATS))
def test_parse_is_strptime_with_english_names(pieces: list[str], fmt: str) -> None:
    text = " ".join(pieces)
    assert _parse(text, fmt) == _strptime(text, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_parse_reads_what_strptime_reads_in_every_format(fmt: str) -> None:
    """Each format filled in from a date, as the corpora write them (both cases of names, 12 am and 12 pm)."""
    for moment in (datetime(2023, 5, 8, 13, 56), datetime(1999, 12, 31, 0, 5), datetime(2024, 2, 29, 12, 0)):
        for text in (moment.strftime(fmt), moment.strftime(fmt).upper(), moment.strftime(fmt).lower()):
            assert dates.parse(text, fmt) == datetime.strptime(text, fmt)


@given(moment=st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31)))
def test_day_month_year_is_strftime(moment: datetime) -> None:
    assert dates.day_month_year(moment) == moment.strftime("%d %B %Y")


MONTHS_DATA = [("2024-03-02", "I went hiking in the Alps with my sister."), ("2024-12-05", "I went to a jazz concert.")]
RUN = """
import locale, sys
from datetime import datetime
import memlab
from memlab.dialogues.locomo import parse_session_time
if sys.argv[1] != "C":
    locale.setlocale(locale.LC_ALL, sys.argv[1])  # as a notebook or an application embedding memlab may
memlab.run(sys.argv[3:], run_dir=sys.argv[2])
print(datetime(2024, 12, 5).strftime("%B"), parse_session_time("1:56 pm on 8 May, 2023"))
"""


def test_a_run_in_a_process_set_to_another_locale_scores_as_in_the_c_locale(tmp_path: Path) -> None:
    """The index wrote "Dezember" for "December" in a German process: recall@1 0.75 fell to 0.25 (an outside audit);
    LoCoMo's "8 May, 2023" could not be read at all."""
    localedef = shutil.which("localedef")  # Debian's `locales` (PostgreSQL's packages bring it) has the sources
    (tmp_path / "loc").mkdir()
    if localedef is None or subprocess.run(
        [localedef, "-i", "de_DE", "-f", "UTF-8", str(tmp_path / "loc" / "de_DE.UTF-8")], capture_output=True
    ).returncode not in (0, 1):  # 1: made, with warnings
        pytest.skip("no localedef or no de_DE locale source on this machine")
    messages, probes = [], []
    for i, (day, text) in enumerate(MONTHS_DATA, 1):
        messages += [
            {"role": "user", "id": f"m{i}", "content": text, "timestamp": f"{day}T10:00:00"},
            {"role": "assistant", "content": "That sounds lovely, tell me more.", "timestamp": f"{day}T10:00:00"},
        ]
    probes = [
        {"question": f"What did I do in {m}?", "evidence": [f"m{i}"]} for i, m in enumerate(["March", "December"], 1)
    ]
    data = tmp_path / "months.jsonl"
    data.write_text(json.dumps({"id": "months", "messages": messages, "probes": probes}) + "\n")
    env = {**os.environ, "LOCPATH": str(tmp_path / "loc"), "PYTHONPATH": str(ROOT)}
    args = ["dataset=jsonl", f"dataset.path={data}", "longterm=chat", "report.plots=false"]
    for name in ("C", "de_DE.UTF-8"):
        done = subprocess.run(
            [sys.executable, "-c", RUN, name, str(tmp_path / name), *args], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
        month = "December" if name == "C" else "Dezember"  # the locale took: strftime names the month in German
        assert done.stdout.splitlines()[-1] == f"{month} 2023-05-08 13:56:00"
    for file in ("metrics.json", "questions.csv", "retrievals.jsonl"):
        assert (tmp_path / "C" / file).read_bytes() == (tmp_path / "de_DE.UTF-8" / file).read_bytes(), file
