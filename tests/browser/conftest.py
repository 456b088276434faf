"""A real JupyterLab (or Notebook 7) on loopback and Debian's Chromium driven by Playwright (docs/browser-testing.md).

Fixtures: ``lab`` (JupyterLab), ``notebook7`` (Notebook 7, the JupyterLab-based classic UI) and ``page``. Both
servers expose ``window.jupyterapp`` (``expose_app_in_browser``), so the helpers below drive either one.

One server of each kind and one Chromium serve the whole session (starting them took 8–15 s a test); a test still
starts from what a new server and a new browser would give it: before each test :meth:`Lab.reset` shuts every
session and kernel down, copies the notebooks afresh and forgets the saved layout and settings, and ``page`` is a
new browser context (its own cookies, storage and cache).

One exception, for speed: kernels. The kernel of a notebook in :data:`WARM_NOTEBOOKS` (each is opened by several
tests) is kept for the next test that opens the same notebook, after a test that passed left it idle; any other
notebook gets a kernel started while the last test ended, which has imported the libraries the notebooks use
(:data:`WARM_UP`: otter's import alone took 2.6 s of CPU). Either kernel comes with no widget and its namespace and
output history reset (:data:`RESET_KERNEL`), so the test's own ``run_all`` rebuilds everything from the notebook's
cells, as in a new kernel; only what Python caches per process stays (imported modules, the library's remembered
fits: the quickstart's explorer took 8.9 s to build in a new process and 0.2 s the second time). A test that needs a
new kernel says so with ``@pytest.mark.cold_kernel``; tests/notebooks runs every notebook in a new kernel.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("BLOWFISH_CHROMIUM", "/usr/bin/chromium")
#: every kernel (and the analyst service) the servers start computes with one BLAS/OpenMP thread. Two cores carry
#: Chromium, the server, the kernel and this process: OpenBLAS's own threads spun against them, and the quickstart's
#: explorer (an Optimized fit per θ) took 242.6 s to execute instead of 34.6 s (notebooks/quickstart.ipynb run by
#: nbclient on this machine, default threads against OPENBLAS_NUM_THREADS=1, one after the other under the same load),
#: and each canvas test on the quickstart took 220-300 s (one hit its 300 s timeout).
ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
#: notebooks opened by several tests, whose kernel the next test reuses (see the module's docstring)
WARM_NOTEBOOKS = ("quickstart.ipynb", "curator_and_analyst.ipynb")
#: run in a kept kernel before the next test opens its notebook: no widget left for the page to restore, no name or
#: output left from the last test, the working directory the notebook's folder (``{root!r}`` is filled in)
RESET_KERNEL = """\
import ipywidgets as _widgets
_widgets.Widget.close_all()
get_ipython().run_line_magic('reset', '-f')
import os as _os
_os.chdir({root!r})
del _os
"""
#: run in the spare kernel (:meth:`Lab.open_session`) before a test's notebook connects to it, then RESET_KERNEL
#: (which runs even if an import failed: the notebook then meets that failure itself)
WARM_UP = """\
try:
    import blowfish_nb, blowfish_nb.widgets, ipywidgets, pandas, otter
except Exception:
    pass
"""
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A running Jupyter server holding copies of the project's notebooks.

    ``kind="lab"`` starts JupyterLab (notebooks at ``/lab/tree/<name>``); ``kind="notebook"`` starts Notebook 7
    (``python -m notebook``, notebooks at ``/notebooks/<name>``). Both bind to loopback with a fixed token.
    """

    #: module started with ``python -m``, the app's config class, the path a notebook opens at
    KINDS = {
        "lab": ("jupyterlab", "LabApp", "lab/tree"),
        "notebook": ("notebook", "JupyterNotebookApp", "notebooks"),
    }

    def __init__(self, workdir: Path, kind: str = "lab"):
        if kind not in self.KINDS:
            raise ValueError(f"kind must be one of {sorted(self.KINDS)}, got {kind!r}")
        module, app, self._path = self.KINDS[kind]
        self.kind = kind
        self.root = workdir / "root"
        self._settings = workdir / "settings"
        self._workspaces = workdir / "workspaces"
        self._runtime = workdir / "runtime"  # the kernels' connection files (a kept kernel is reset through one)
        #: a kernel no session uses yet, warmed up by WARM_UP in a thread (see open_session); None when there is none
        self._spare: str | None = None
        self._warming = None
        self._warm_ok = False
        self._fresh_files()
        self.token = secrets.token_hex(16)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (workdir / f"{module}.log").open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable, "-m", module, "--no-browser", "--allow-root",
                f"--IdentityProvider.token={self.token}", "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
                f"--ServerApp.root_dir={self.root}", f"--{app}.expose_app_in_browser=True",
                "--LabApp.news_url=None", f"--{app}.user_settings_dir={self._settings}",
                f"--{app}.workspaces_dir={self._workspaces}",
            ],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, "JUPYTER_PLATFORM_DIRS": "1", "JUPYTER_RUNTIME_DIR": str(self._runtime),
                 **ONE_BLAS_THREAD},
        )
        self._wait_ready()

    def _wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} server exited with {self.proc.returncode}; see {self.log.name}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2):
                    return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"{self.kind} server did not answer within {timeout}s; see {self.log.name}")

    def reset(self, keep_warm: bool = True) -> None:
        """Give the next test what a newly started server would: no session and no kernel (each test starts its
        own), a fresh copy of the notebooks (nothing a test wrote or saved), no saved workspace (JupyterLab would
        reopen the last test's tabs) and only the settings the server started with.

        With ``keep_warm``, the session of a notebook in :data:`WARM_NOTEBOOKS` stays if its kernel is idle, reset
        by :data:`RESET_KERNEL` (opening that notebook connects to it: JupyterLab finds a session by its path), and
        so does an unused spare kernel that warmed up without an error; then a spare is started if there is none."""
        kept = set()
        if self._warming is not None:
            self._warming.join(timeout=120)
            self._warming = None
        if keep_warm and self._spare is not None and self._warm_ok:
            kept.add(self._spare)
        else:
            self._spare = None
        for session in self._api("GET", "/api/sessions"):
            if keep_warm and session["path"] in WARM_NOTEBOOKS and self._reset_kernel(session["kernel"]["id"]):
                kept.add(session["kernel"]["id"])
            else:
                self._api("DELETE", f"/api/sessions/{session['id']}")
        for kernel in self._api("GET", "/api/kernels"):
            if kernel["id"] not in kept:
                self._api("DELETE", f"/api/kernels/{kernel['id']}")
        left = [k["id"] for k in self._api("GET", "/api/kernels") if k["id"] not in kept]
        if left:
            raise RuntimeError(f"{self.kind} server kept kernels {left} after shutting them down")
        self._fresh_files()
        if keep_warm and self._spare is None:
            self.start_spare()

    def start_spare(self) -> None:
        """Start the spare kernel and warm it up in a thread (:data:`WARM_UP`, then :data:`RESET_KERNEL`): the test
        goes on meanwhile (a notebook that connects to the kernel waits until it is idle)."""
        import threading

        # path "": the kernel works in the notebooks' folder from the start, as one JupyterLab starts for a notebook
        # there would (without a path it would inherit the server's working directory, the checkout, and a notebook
        # that connected before the warm-up's chdir ran, or after it failed, wrote its files there)
        self._spare = self._api("POST", "/api/kernels", {"name": "python3", "path": ""})["id"]
        self._warm_ok = False

        def warm(kernel_id=self._spare):
            try:
                self._warm_ok = self._execute(kernel_id, WARM_UP + RESET_KERNEL.format(root=str(self.root)), timeout=120)
            except Exception as e:  # noqa: BLE001 (the kernel is then shut down and the next test starts its own)
                self._warm_ok = False
                self._note(f"warming kernel {kernel_id} failed: {e!r}")

        self._warming = threading.Thread(target=warm, daemon=True)
        self._warming.start()

    def open_session(self, name: str) -> None:
        """Bind the notebook ``name`` to the spare kernel (a session for its path, which JupyterLab and Notebook 7
        connect to when they open it), unless a session for it exists already (a kept kernel) or there is no spare."""
        if self._spare is None or any(s["path"] == name for s in self._api("GET", "/api/sessions")):
            return
        spare, self._spare = self._spare, None
        self._api("POST", "/api/sessions", {"path": name, "name": name, "type": "notebook", "kernel": {"id": spare}})

    def _reset_kernel(self, kernel_id: str) -> bool:
        """Run :data:`RESET_KERNEL` in the idle kernel ``kernel_id``; whether it ran without an error (if not, or if
        the kernel is busy or gone, the caller shuts it down)."""
        try:
            if self._api("GET", f"/api/kernels/{kernel_id}")["execution_state"] != "idle":
                return False
        except OSError:
            return False
        return self._execute(kernel_id, RESET_KERNEL.format(root=str(self.root)), timeout=60)

    def _execute(self, kernel_id: str, code: str, timeout: float) -> bool:
        """Run ``code`` in kernel ``kernel_id`` through its connection file; whether it ran without an error."""
        from jupyter_client import BlockingKernelClient

        connection = self._runtime / f"kernel-{kernel_id}.json"
        deadline = time.monotonic() + 30
        while not connection.is_file():  # a kernel just started writes it within a second
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        client = BlockingKernelClient(connection_file=str(connection))
        client.load_connection_file()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=60)
            reply = client.execute_interactive(code, timeout=timeout, output_hook=lambda msg: None, allow_stdin=False)
            return reply["content"]["status"] == "ok"
        except (RuntimeError, TimeoutError) as e:
            self._note(f"running code in kernel {kernel_id} failed: {e!r}")
            return False
        finally:
            client.stop_channels()

    def _note(self, text: str) -> None:
        """A line in the server's log (why a kernel was not kept)."""
        self.log.write(f"[tests/browser/conftest.py] {text}\n")
        self.log.flush()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def notebook_url(self, name: str) -> str:
        return f"{self.url}/{self._path}/{name}?token={self.token}"

    def _fresh_files(self) -> None:
        for folder in (self._settings, self._workspaces):
            shutil.rmtree(folder, ignore_errors=True)
        # the notebooks' folder itself stays (a kept kernel's working directory): only what is in it is replaced
        self.root.mkdir(parents=True, exist_ok=True)
        for item in self.root.iterdir():
            if item.is_dir() and not item.is_symlink():
                shutil.rmtree(item)
            else:
                item.unlink()
        shutil.copytree(ROOT / "notebooks", self.root, dirs_exist_ok=True)
        notify = self._settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
        notify.parent.mkdir(parents=True)
        notify.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        self._workspaces.mkdir()

    def _api(self, method: str, path: str, body: dict | None = None):
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Authorization": f"token {self.token}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            body = answer.read()
        return json.loads(body) if body else None

    def stop(self) -> None:
        if self._warming is not None:
            self._warming.join(timeout=60)
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=20)
        except ProcessLookupError:  # the server and everything it started are gone already
            self.proc.poll()
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=20)
        self.log.close()


class _Servers:
    """The session's servers, one per kind, started when a test first asks for that kind (and again if one died)."""

    def __init__(self, tmp_path_factory):
        self._tmp = tmp_path_factory
        self._running: dict[str, Lab] = {}
        #: whether the last test that used a server passed (a kernel is only kept after a test that passed)
        self._passed = True

    def fresh(self, kind: str, keep_warm: bool = True) -> Lab:
        server = self._running.get(kind)
        if server is not None and not server.alive():
            server.stop()
            server = None
        if server is None:
            server = self._running[kind] = Lab(self._tmp.mktemp(kind), kind=kind)
            if keep_warm:
                server.start_spare()
        else:
            server.reset(keep_warm=keep_warm and self._passed)
        return server

    def stop(self) -> None:
        for server in self._running.values():
            server.stop()


@pytest.fixture(scope="session")
def _servers(tmp_path_factory):
    servers = _Servers(tmp_path_factory)
    yield servers
    servers.stop()


def _server(kind: str, servers: _Servers, request):
    server = servers.fresh(kind, keep_warm=request.node.get_closest_marker("cold_kernel") is None)
    yield server
    report = getattr(request.node, "rep_call", None)
    servers._passed = report is not None and report.passed


@pytest.fixture
def lab(_servers, request):
    """JupyterLab, as a newly started one would be (see :meth:`Lab.reset`)."""
    yield from _server("lab", _servers, request)


@pytest.fixture
def notebook7(_servers, request):
    """Notebook 7 (``python -m notebook``) instead of JupyterLab; the same helpers drive it."""
    yield from _server("notebook", _servers, request)


def pytest_configure(config):
    config.addinivalue_line("markers", "cold_kernel: the test's notebook starts in a new kernel, not a kept one "
                                       "(tests/browser/conftest.py, WARM_NOTEBOOKS)")


@pytest.fixture(scope="session")
def _chromium():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make test` (it installs Debian's chromium) or set BLOWFISH_CHROMIUM")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        holder = {"browser": None}

        def browser():
            if holder["browser"] is None or not holder["browser"].is_connected():
                holder["browser"] = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            return holder["browser"]

        yield browser
        if holder["browser"] is not None:
            holder["browser"].close()


@pytest.fixture
def page(request, _chromium):
    """A page in a new browser context: no cookies, storage or cache from another test."""
    ARTIFACTS.mkdir(exist_ok=True)
    context = _chromium().new_context(viewport={"width": 1400, "height": 1100})
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    outcome = "failed" if getattr(request.node, "rep_call", None) and request.node.rep_call.failed else "passed"
    pg.screenshot(path=str(ARTIFACTS / f"{request.node.name}-{outcome}.png"), full_page=True)
    context.close()


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


def open_notebook(page, lab: Lab, name: str) -> None:
    """Open a notebook and wait until its kernel is really connected (pitfall 1); its kernel is a kept or a spare
    one when there is one (see the module's docstring)."""
    lab.open_session(name)
    page.goto(lab.notebook_url(name))
    page.wait_for_function(
        """() => {
            const app = window.jupyterapp;
            const w = app && app.shell.currentWidget;
            const ctx = w && w.sessionContext;
            const kernel = ctx && ctx.session && ctx.session.kernel;
            return !!(ctx && ctx.isReady && kernel && kernel.status === 'idle'
                      && kernel.connectionStatus === 'connected');
        }""",
        timeout=90_000,
    )


def run_all(page) -> None:
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")


def run_last_cell(page) -> None:
    page.evaluate(
        """async () => {
            const panel = window.jupyterapp.shell.currentWidget;
            panel.content.activeCellIndex = panel.content.widgets.length - 1;
            await window.jupyterapp.commands.execute('notebook:run-cell');
        }"""
    )


def run_cell(page, marker: str) -> None:
    """Run the code cell whose source contains ``marker``."""
    page.evaluate(
        """async (marker) => {
            const panel = window.jupyterapp.shell.currentWidget;
            const cells = panel.content.widgets;
            const i = cells.findIndex(c => c.model.sharedModel.getSource().includes(marker));
            if (i < 0) throw new Error('no cell contains ' + marker);
            panel.content.activeCellIndex = i;
            await window.jupyterapp.commands.execute('notebook:run-cell');
        }""",
        marker,
    )


#: the explorer's readout says this while its full mechanism choice for a new graph is still pending (deferred in the
#: kernel's event loop, so the kernel reads "idle" meanwhile); when it ends, the readout shrinks and the canvas moves
CHOOSING = "choosing the best mechanism"  # in widgets.curator.PROVISIONAL; test_curator.py reads it too


def wait_until_settled(page, element) -> None:
    """Wait until the canvas ``element`` (an element handle) is drawn, the kernel is idle, no explorer is still
    choosing a mechanism (:data:`CHOOSING`), and neither the canvas's box nor cytoscape's view (pan, zoom, edge count)
    has changed for 600 ms, so clicks land where cytoscape drew the graph. A readout the kernel is still computing can
    reflow the page after the canvas looked still (a drag then starts above its node and pans the view instead)."""
    page.wait_for_function(
        """([box, choosing]) => {
            if (!box || box.dataset.ready !== '1') return false;
            const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
            const kernel = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
            const idle = (!kernel || kernel.status === 'idle')
                && ![...document.querySelectorAll('.blowfish-readout')].some(e => e.innerText.includes(choosing));
            const r = box.getBoundingClientRect();
            const cy = box.__cy;
            const view = cy ? [cy.pan().x, cy.pan().y, cy.zoom() * 1000] : [];
            const key = [r.left, r.top, r.width, r.height, ...view].map(Math.round).join(',')
                        + '|' + box.dataset.edges + '|' + idle;
            const now = performance.now();
            if (box.__settleKey !== key) { box.__settleKey = key; box.__settleAt = now; return false; }
            return idle && now - box.__settleAt > 600;
        }""",
        arg=[element, CHOOSING], polling=100, timeout=60_000,
    )


#: true once the element's box has not moved for ``quiet`` ms and the notebook's kernel is idle (state on the element)
_STILL_JS = """([el, quiet, choosing]) => {
    const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const kernel = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
    const idle = (!kernel || kernel.status === 'idle')
        && ![...document.querySelectorAll('.blowfish-readout')].some(e => e.innerText.includes(choosing));
    const r = el.getBoundingClientRect();
    const key = [r.left, r.top, r.width, r.height].map(Math.round).join(',') + '|' + idle;
    const now = performance.now();
    if (el.__stillKey !== key) { el.__stillKey = key; el.__stillAt = now; return false; }
    return idle && r.width > 0 && now - el.__stillAt > quiet;
}"""


def wait_until_still(page, selector: str, quiet: float = 500) -> None:
    """Wait until the first element under ``selector`` has kept its place and size on screen for ``quiet`` ms with the
    kernel idle: a gesture aimed at coordinates read after that lands where they were read (a readout the kernel is
    still computing, or a plot's transition, would otherwise reflow the page between the read and the press)."""
    element = page.locator(selector).first
    element.wait_for(state="visible")
    page.wait_for_function(_STILL_JS, arg=[element.element_handle(), quiet, CHOOSING], polling=100, timeout=60_000)


def drag(page, selector: str, dx: float) -> None:
    """Drag the element under ``selector`` by ``dx`` pixels with the mouse, as a user would (sliders report on release);
    the press waits until the element is still (:func:`wait_until_still`)."""
    handle = page.locator(selector)
    handle.scroll_into_view_if_needed()
    wait_until_still(page, selector)
    box = handle.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] / 2, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2 + dx, y, steps=8)
    page.mouse.up()


def cell_text(page, marker: str, pattern: str):
    """Re-run the cell whose source contains ``marker``; wait for its output to match ``pattern``; the match."""
    import re

    run_cell(page, marker)
    page.wait_for_function(
        "([m, p]) => { const c = Array.from(document.querySelectorAll('.jp-Notebook .jp-Cell'))"
        ".find(c => c.innerText.includes(m)); return !!c && new RegExp(p).test(c.innerText); }",
        arg=[marker, pattern], timeout=60_000,
    )
    return re.search(pattern, page.locator(".jp-Notebook .jp-Cell", has_text=marker).first.inner_text())


# Outputs of the notebook *model* (what the kernel sent), not of the page: JupyterLab renders only the cells near the
# view (windowed notebooks), so the text of a cell scrolled out of view may be missing from the DOM.

#: the outputs, as JSON text, of the code cell whose source contains the marker (null while it has not run)
CELL_OUTPUTS_JS = """(marker) => {
    const cells = window.jupyterapp.shell.currentWidget.content.widgets;
    const cell = cells.find(c => c.model.type === 'code' && c.model.sharedModel.getSource().includes(marker));
    if (!cell) throw new Error('no code cell contains ' + marker);
    if (cell.model.executionCount === null) return null;
    return JSON.stringify(cell.model.outputs.toJSON());
}"""
#: every error output of the notebook's code cells, as "ename: evalue"
ERRORS_JS = """() => window.jupyterapp.shell.currentWidget.content.widgets
    .filter(c => c.model.type === 'code')
    .flatMap(c => c.model.outputs.toJSON())
    .filter(o => o.output_type === 'error')
    .map(o => o.ename + ': ' + o.evalue)"""


def wait_for_outputs(page, marker: str, pattern: str, timeout: float = 120_000) -> str:
    """Wait until the code cell containing ``marker`` has run and its outputs (kernel side, as JSON text) match the
    regular expression ``pattern``; those outputs."""
    page.wait_for_function(
        f"([m, p]) => {{ const out = ({CELL_OUTPUTS_JS})(m); return out !== null && new RegExp(p).test(out); }}",
        arg=[marker, pattern], timeout=timeout,
    )
    return page.evaluate(CELL_OUTPUTS_JS, marker)


def output_text(page, marker: str) -> str:
    """The printed text and text/plain results of the code cell containing ``marker`` ("" before it ran)."""
    outputs = json.loads(page.evaluate(CELL_OUTPUTS_JS, marker) or "[]")
    return "".join(o.get("text", "") + "".join(o.get("data", {}).get("text/plain", "")) for o in outputs)


def wait_for_output_text(page, marker: str, pattern: str, timeout: float = 120_000) -> str:
    """:func:`wait_for_outputs`, then the cell's :func:`output_text`."""
    wait_for_outputs(page, marker, pattern, timeout)
    return output_text(page, marker)
