"""English dates whatever the process's locale: the corpora write them in English, and the index reads them so.

`time.strftime` and `datetime.strptime` take month and weekday names and am/pm from ``LC_TIME``: in a process that
called ``setlocale(LC_ALL, "")`` under a German locale (a notebook, an application embedding memlab) the index wrote
"Dezember" where the command line writes "December", and LoCoMo's "8 May, 2023" could not be read. `parse` is
`datetime.strptime` for the directives the loaders use, with English names; `day_month_year` is ``%d %B %Y``.

>>> parse("1:56 pm on 8 May 2023", "%I:%M %p on %d %B %Y")
datetime.datetime(2023, 5, 8, 13, 56)
>>> day_month_year(datetime(2023, 12, 5))
'05 December 2023'
"""

from __future__ import annotations

import functools
import re
from datetime import datetime

MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _names(names: tuple[str, ...]) -> str:
    return "|".join(sorted(names, key=len, reverse=True))  # the longest first, as strptime orders them


# Each directive's pattern as CPython's `_strptime.TimeRE` writes it, with English names.
_DIRECTIVES = {
    "d": r"(?P<d>3[0-1]|[1-2]\d|0[1-9]|[1-9]| [1-9])",
    "m": r"(?P<m>1[0-2]|0[1-9]|[1-9])",
    "Y": r"(?P<Y>\d\d\d\d)",
    "H": r"(?P<H>2[0-3]|[0-1]\d|\d)",
    "I": r"(?P<I>1[0-2]|0[1-9]|[1-9]| [1-9])",
    "M": r"(?P<M>[0-5]\d|\d)",
    "p": r"(?P<p>am|pm)",
    "B": f"(?P<B>{_names(MONTHS)})",
    "b": f"(?P<b>{_names(tuple(m[:3] for m in MONTHS))})",
    "a": f"(?P<a>{_names(tuple(d[:3] for d in WEEKDAYS))})",
}


_REGEX_CHARS = re.compile(r"([\\.^$*+?\(\){}\[\]|])")  # what strptime escapes in a format's literal text
_WHITESPACE = re.compile(r"\s+")


@functools.lru_cache(maxsize=64)
def _pattern(fmt: str) -> re.Pattern[str]:
    """`fmt` as strptime turns it into a regular expression: literal text escaped, whitespace as ``\\s+``."""
    parts = re.split(r"(%[a-zA-Z])", fmt)
    regex = "".join(
        _DIRECTIVES[part[1]] if part.startswith("%") else _WHITESPACE.sub(r"\\s+", _REGEX_CHARS.sub(r"\\\1", part))
        for part in parts
    )
    return re.compile(regex, re.IGNORECASE)


def parse(text: str, fmt: str) -> datetime:
    """`datetime.strptime(text, fmt)` with English names (directives d m Y H I M p B b a); `ValueError` if no match."""
    found = _pattern(fmt).fullmatch(text)
    if found is None:
        raise ValueError(f"time data {text!r} does not match format {fmt!r}")
    got = found.groupdict()
    month = 1
    if got.get("m"):
        month = int(got["m"])
    elif got.get("B") or got.get("b"):
        name = (got.get("B") or got["b"]).lower()
        month = next(i for i, m in enumerate(MONTHS, 1) if m.lower().startswith(name) and len(name) in (3, len(m)))
    hour = int(got["H"]) if got.get("H") else 0
    if got.get("I"):  # as strptime: 12 am is 0, 12 pm is 12; without %p the hour is taken as am
        hour = int(got["I"]) % 12 + (12 if (got.get("p") or "").lower() == "pm" else 0)
    return datetime(int(got.get("Y") or 1900), month, int(got.get("d") or 1), hour, int(got.get("M") or 0))


def day_month_year(moment: datetime) -> str:
    """``moment.strftime("%d %B %Y")`` with the English month name: '05 December 2023'."""
    return f"{moment.day:02d} {MONTHS[moment.month - 1]} {moment.year}"
