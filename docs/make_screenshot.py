"""The README's picture: the quickstart explorer in JupyterLab, as a newcomer first sees it.

Starts JupyterLab on loopback with the ``Lab`` class of ``tests/browser/conftest.py`` (a
temporary root holding copies of ``notebooks/``, a fresh kernel), opens
``quickstart.ipynb`` in Debian's Chromium (``/usr/bin/chromium`` or
``$BLOWFISH_CHROMIUM``; never a downloaded browser), runs every cell, waits until the
explorer's bars, its policy canvas and the kernel's printout are there, and saves a
screenshot of the ``.blowfish-explorer`` element.

Run from the checkout (after ``make lab`` or ``make test`` set up ``.venv``)::

    .venv/bin/python docs/make_screenshot.py            # writes docs/images/quickstart-explorer.png
    .venv/bin/python docs/make_screenshot.py out.png    # or anywhere else
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, Lab, open_notebook, run_all  # noqa: E402

OUT = ROOT / "docs" / "images" / "quickstart-explorer.png"
BARS = ".blowfish-explorer .blowfish-bars rect.bar"
VIEWPORT = {"width": 1400, "height": 1100}


def main(out: Path = OUT) -> Path:
    """Screenshot the quickstart explorer into ``out``; returns the path written."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: `make test` installs Debian's chromium (or set BLOWFISH_CHROMIUM)")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="blowfish-screenshot-") as tmp:
        lab = Lab(Path(tmp))
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport=VIEWPORT, device_scale_factor=1)
                page.set_default_timeout(120_000)
                open_notebook(page, lab, "quickstart.ipynb")
                run_all(page)
                # 50 true + 50 noisy bars, the drawn canvas, and the last cell's printout (every cell has run)
                page.wait_for_function(f"() => document.querySelectorAll('{BARS}').length >= 100")
                page.wait_for_selector(".blowfish-explorer .blowfish-canvas[data-ready='1']")
                page.wait_for_selector("text=kernel sees epsilon =")
                explorer = page.locator(".blowfish-explorer").first
                explorer.scroll_into_view_if_needed()
                page.wait_for_timeout(1500)  # bqplot's bar transitions and cytoscape's fit settle
                explorer.screenshot(path=str(out))
                browser.close()
        finally:
            lab.stop()
    return out


if __name__ == "__main__":
    print(main(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else OUT))
