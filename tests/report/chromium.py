"""Screenshots of pages in headless Chromium (Debian's `chromium` package), and what a rendered page looks like.

Tests that use it skip with a reason when Chromium is not installed, unless MEMLAB_REQUIRE_SERVICES=1 (CI installs it).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image

WINDOW = (1280, 2000)


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("MEMLAB_REQUIRE_SERVICES") == "1":
            pytest.fail(
                "chromium is not installed (apt-get install -y chromium); MEMLAB_REQUIRE_SERVICES=1 requires it"
            )
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium)")
    return found


def screenshot(page: Path, out: Path) -> np.ndarray:
    profile = out.parent / f"{out.stem}-profile"
    args = [
        chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", f"--screenshot={out}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
        page.resolve().as_uri(),
    ]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and out.is_file(), done.stderr[-2000:]
    return image.imread(out)


def overflowing(page: Path, selector: str, out: Path) -> list[str]:
    """The text of each element matching `selector` whose content is wider than its box, as Chromium lays it out."""
    probe = out / f"{page.stem}-probe.html"
    script = (
        "<script>document.addEventListener('DOMContentLoaded', () => { const wide = [...document.querySelectorAll("
        f"{selector!r})].filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent.trim()); "
        "document.body.setAttribute('data-overflowing', JSON.stringify(wide)); });</script>"
    )
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", script + "</body>"), encoding="utf-8")
    args = [
        chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
        f"--user-data-dir={out / 'probe-profile'}", f"--window-size={WINDOW[0]},{WINDOW[1]}", "--dump-dom",
        probe.resolve().as_uri(),
    ]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    found = re.search(r"data-overflowing=\"([^\"]*)\"", done.stdout)
    assert done.returncode == 0 and found, done.stderr[-2000:]
    return list(json.loads(html.unescape(found[1])))


def assert_rendered(pixels: np.ndarray) -> None:
    """A full-size page with text, tables and figures: many colours, nothing like a blank or error page."""
    assert pixels.shape[:2] == (WINDOW[1], WINDOW[0])
    rgb = (pixels[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    # one uint32 per pixel: a 1-D unique, not `np.unique(axis=0)`'s row sort (~2 s a screenshot)
    colours = np.unique(rgb[:, 0].astype(np.uint32) << 16 | rgb[:, 1].astype(np.uint32) << 8 | rgb[:, 2])
    assert len(colours) > 500, f"only {len(colours)} colours: the page did not render"
    non_white = (rgb < 245).any(axis=1).mean()
    assert 0.04 < non_white < 0.9, f"{non_white:.1%} of the page is drawn"
    # the figures' coloured lines, bars and points are there (text and tables are grey)
    spread = rgb.max(axis=1).astype(int) - rgb.min(axis=1)
    assert (spread > 100).sum() > 2000, "no figure drawn"
