"""A self-contained HTML page: inline stylesheet, tables, PNG figures as base64 data URIs.

>>> "data:image/png;base64," in figure(b"png bytes", "a caption")
True
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memlab.report.table import Table

if TYPE_CHECKING:
    import pandas as pd

STYLE = """
:root { --ink: #1d2433; --muted: #5f6b7a; --line: #e3e7ee; --accent: #2f6fed; --bad: #c0392b; --good: #1e8e3e;
        --card: #f6f8fb; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans",
       "Noto Sans CJK SC", sans-serif; color: var(--ink); background: #fff; }
header { padding: 28px 40px 18px; border-bottom: 1px solid var(--line);
         background: linear-gradient(180deg, #f3f6fc 0%, #fff 100%); }
header h1 { margin: 0 0 4px; font-size: 26px; font-weight: 650; letter-spacing: -0.01em; }
header p { margin: 2px 0; color: var(--muted); }
main { padding: 8px 40px 48px; max-width: 1440px; }
h2 { font-size: 19px; margin: 32px 0 10px; padding-bottom: 6px; border-bottom: 2px solid var(--line); }
h3 { font-size: 16px; margin: 22px 0 8px; }
code { font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: var(--card);
       padding: 1px 5px; border-radius: 4px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr)); gap: 12px; margin: 18px 0 6px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 12px 14px;
        min-width: 0; overflow-wrap: anywhere; }
.card .label { color: var(--muted); font-size: 12.5px; text-transform: uppercase; letter-spacing: 0.04em; }
.card .value { font-size: 24px; font-weight: 650; margin-top: 2px; }
.card .note { color: var(--muted); font-size: 12.5px; }
.grid2 { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); gap: 18px; }
figure { margin: 10px 0; background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 10px; }
figure img { width: 100%; height: auto; display: block; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 6px; }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: 13.5px; width: auto; }
th, td { padding: 6px 8px; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; }
th { background: var(--card); font-weight: 600; white-space: normal; vertical-align: bottom; min-width: 56px; }
td:first-child, th:first-child { text-align: left; }
td.text, th.text { text-align: left; white-space: normal; max-width: 520px; }
tr:hover td { background: #fafbfe; }
.scroll { overflow-x: auto; max-width: 100%; }
.failed td { color: var(--bad); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; font-weight: 600; }
.badge.ok { background: #e6f4ea; color: var(--good); } .badge.failed { background: #fdecea; color: var(--bad); }
.badge.pareto { background: #e8f0fe; color: var(--accent); }
.muted { color: var(--muted); }
.banner { margin: 18px 0 6px; padding: 12px 16px; border-radius: 10px; background: #fdecea; color: var(--bad);
          border: 1px solid var(--bad); font-weight: 650; }
.banner.warn { background: #fef7e0; color: #8a5300; border-color: #f9ab00; }
footer { color: var(--muted); font-size: 12.5px; padding: 18px 40px; border-top: 1px solid var(--line); }
"""


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def prose(text: Any) -> str:
    """`text` escaped, its markdown inline code (`memlab recommend`) as <code>, as report.md shows it.

    >>> prose("run `memlab report A <B>` & see")
    'run <code>memlab report A &lt;B&gt;</code> &amp; see'
    """
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", esc(text))


def figure(png: bytes, caption: str) -> str:
    """An embedded PNG with its caption."""
    data = base64.b64encode(png).decode("ascii")
    img = f'<img alt="{esc(caption)}" src="data:image/png;base64,{data}">'
    return f"<figure>{img}<figcaption>{esc(caption)}</figcaption></figure>"


def cards(items: Iterable[tuple[str, str, str]]) -> str:
    """Headline numbers: (label, value, note) each."""
    body = "".join(
        f'<div class="card"><div class="label">{esc(label)}</div><div class="value">{esc(value)}</div>'
        f'<div class="note">{esc(note)}</div></div>'
        for label, value, note in items
    )
    return f'<div class="cards">{body}</div>'


def table(
    frame: pd.DataFrame | Table,
    *,
    text_columns: Sequence[str] = (),
    row_classes: Sequence[str] | None = None,
    raw_columns: Sequence[str] = (),
    headers: Mapping[str, str] | None = None,
) -> str:
    """An HTML table of formatted cells; `raw_columns` hold trusted HTML, `headers` short column titles."""
    headers = headers or {}
    head = "".join(
        f'<th class="{"text" if c in text_columns else ""}" title="{esc(c)}">{esc(headers.get(c, c))}</th>'
        for c in frame.columns
    )
    body = frame.rows if isinstance(frame, Table) else (tuple(row) for _, row in frame.iterrows())
    rows = []
    for i, values in enumerate(body):
        cells = []
        for c, value in zip(frame.columns, values, strict=True):
            content = str(value) if c in raw_columns else esc("" if value is None else value)
            cells.append(f'<td class="{"text" if c in text_columns else ""}">{content}</td>')
        cls = f' class="{row_classes[i]}"' if row_classes and row_classes[i] else ""
        rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'


def page(title: str, subtitle: Sequence[str], body: str, footer: str = "") -> str:
    """A whole HTML document."""
    sub = "".join(f"<p>{line}</p>" for line in subtitle)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head>"
        f"<body><header><h1>{esc(title)}</h1>{sub}</header><main>{body}</main>"
        f"<footer>{footer}</footer></body></html>\n"
    )
