"""The AnalystPanel in JupyterLab on a RemoteSession, the service in another process (issue 14's browser test).

``python -m blowfish_nb.service.cli serve`` runs from a TOML written to tmp_path (port 0), and prints its URL and the
analyst's token; a notebook in JupyterLab connects with only those two strings and shows the panel. Two real clicks
on Run: the budget bar drops each time, and agrees with the server's ``/v1/budget``. Then an α that needs more ε than
is left: the panel shows the service's refusal and the server's spent does not move.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import httpx
import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.browser.conftest import ARTIFACTS, ONE_BLAS_THREAD, cell_text, open_notebook, run_all

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

PANEL = ".blowfish-analyst"
BAR = f"{PANEL} .blowfish-budget .progress-bar"
BUDGET = 1.0
CONFIG = f"""
[data]
path = "embedded:salaries"

[columns.age]
bins = 31
bounds = [18, 80]
policy = "line"

[columns.salary]
bins = 50
bounds = [0, 250000]
policy = {{ name = "threshold", theta = 3 }}

[ledger]
path = "ledger.db"

[accounts]
course = {BUDGET}

[analysts]
ana = "course"

[server]
host = "127.0.0.1"
port = 0
"""
_SERVING = re.compile(r"serving .* at (http://\S+)")
_TOKEN = re.compile(r"token for new analyst ana: (\S+)")


@pytest.fixture
def service(tmp_path):
    """``blowfish-nb serve`` in its own process: ``(url, token)`` parsed from its stdout; stopped by its PID."""
    folder = tmp_path / "service"
    folder.mkdir()
    config = folder / "service.toml"
    config.write_text(CONFIG)
    key = tmp_path / "keys" / "ledger.key"  # the ledger's key, outside the ledger's folder
    key.parent.mkdir()
    subprocess.run([sys.executable, "-m", "blowfish_nb.service.cli", "init", "--config", str(config), "--key",
                    str(key)], check=True, capture_output=True)
    out = (folder / "serve.out").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "blowfish_nb.service.cli", "serve", str(config), "--key", str(key)],
                            cwd=folder,
                            stdout=subprocess.PIPE, stderr=out, stdin=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", **ONE_BLAS_THREAD})
    try:
        url = token = None
        deadline = time.monotonic() + 60
        while url is None:  # the token line comes first, then the URL
            line = proc.stdout.readline()
            if not line or time.monotonic() > deadline:
                raise RuntimeError(f"the service did not print its URL; see {out.name}")
            if m := _TOKEN.search(line):
                token = m.group(1)
            if m := _SERVING.search(line):
                url = m.group(1)
        assert token is not None, "the service printed no token for ana"
        _wait_healthy(url)
        yield url, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        proc.stdout.close()
        out.close()


def _wait_healthy(url: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url}/healthz did not answer")
        time.sleep(0.2)


def _books(url: str, token: str) -> dict:
    """The server's own figures for the account: /v1/budget and the number of ledger entries."""
    headers = {"Authorization": f"Bearer {token}"}
    budget = httpx.get(f"{url}/v1/budget", headers=headers, timeout=30).json()
    entries = httpx.get(f"{url}/v1/ledger", headers=headers, timeout=30).json()["entries"]
    return {**budget, "releases": len(entries)}


def _write_notebook(root, url: str, token: str) -> str:
    """The analyst's notebook: nothing but the URL and the token (the data live in the service's process)."""
    nb = new_notebook(cells=[
        new_code_cell("import blowfish_nb as bf\nfrom blowfish_nb.widgets import AnalystPanel\n\n"
                      f"s = bf.connect({json.dumps(url)}, {json.dumps(token)})\n"
                      "panel = AnalystPanel(s, alpha=60, beta=0.05)\npanel"),
        new_code_cell("# The remote books\nprint(f'remote: spent = {s.spent:.6f}, remaining = {s.remaining:.6f}, '\n"
                      "      f'releases = {len(s.ledger)}, data here = {hasattr(s, \"_data\")}')"),
    ], metadata={"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}})
    name = "remote_analyst.ipynb"
    nbformat.write(nb, root / name)
    return name


def _bar(page) -> float:
    """The budget bar's fill in the DOM, in percent of its width."""
    return page.eval_on_selector(BAR, "e => parseFloat(e.style.width)")


def _left(page) -> float:
    return float(re.search(r"ε left ([0-9.e+-]+)", page.locator(f"{PANEL} .blowfish-budget-label").inner_text())
                 .group(1))


def _run(page, releases: int) -> None:
    """A real click on Run; wait until the history holds ``releases`` rows and the bar has moved."""
    before = _bar(page)
    page.locator(f"{PANEL} .blowfish-run").click()
    page.wait_for_function(f"() => document.querySelectorAll('{PANEL} .blowfish-history tr').length === {releases + 1}")
    page.wait_for_function("([sel, b]) => parseFloat(document.querySelector(sel).style.width) < b", arg=[BAR, before])


def test_panel_on_a_remote_session_two_runs_then_refused(service, lab, page):
    url, token = service
    name = _write_notebook(lab.root, url, token)
    open_notebook(page, lab, name)
    run_all(page)
    page.wait_for_selector(f"{PANEL} .blowfish-cost:has-text('this release will cost')", timeout=120_000)
    page.locator(f"{PANEL} .blowfish-run").scroll_into_view_if_needed()
    assert _books(url, token)["spent"] == 0 and _bar(page) == pytest.approx(100.0, abs=0.5)
    assert "ε left 1 of 1" in page.locator(f"{PANEL} .blowfish-budget-label").inner_text()

    bars, spent = [_bar(page)], [0.0]
    for n in (1, 2):
        _run(page, n)
        page.wait_for_selector(f"{PANEL} .blowfish-message:has-text('released')")
        books = _books(url, token)
        assert books["releases"] == n and books["spent"] > spent[-1]
        bars.append(_bar(page))
        spent.append(books["spent"])
        # the bar shows what the server says is left, and so does the label
        assert bars[-1] == pytest.approx(100 * books["remaining"] / BUDGET, abs=0.5)
        assert _left(page) == pytest.approx(books["remaining"], rel=1e-3)
        page.screenshot(path=str(ARTIFACTS / f"analyst_service-run{n}.png"), full_page=True)
    assert bars[0] > bars[1] > bars[2]  # the bar dropped at each Run

    # an α that needs more ε than is left: the service refuses, nothing is charged
    alpha = page.locator(f"{PANEL} .blowfish-alpha input")
    alpha.fill("0.5")
    alpha.press("Enter")
    page.wait_for_selector(f"{PANEL} .blowfish-cost:has-text('more than the')")
    page.locator(f"{PANEL} .blowfish-run").click()
    page.wait_for_selector(f"{PANEL} .blowfish-message:has-text('refused')")
    message = page.locator(f"{PANEL} .blowfish-message").inner_text()
    assert "nothing was computed or charged" in message
    page.screenshot(path=str(ARTIFACTS / "analyst_service-refused.png"), full_page=True)
    books = _books(url, token)
    assert books["spent"] == spent[-1] and books["releases"] == 2
    assert _bar(page) == pytest.approx(bars[-1], abs=1e-6)
    assert page.locator(f"{PANEL} .blowfish-history tr").count() == 3

    # the analyst's kernel reads the same books from the service, and holds no data
    m = cell_text(page, "# The remote books", r"remote: spent = ([0-9.]+), remaining = ([0-9.]+), releases = 2, "
                                              r"data here = False")
    assert float(m.group(1)) == pytest.approx(spent[-1], abs=1e-6)
