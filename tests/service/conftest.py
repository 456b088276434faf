"""A real analyst service for the HTTP tests: ``blowfish-nb serve`` in its own process, on a free port.

:func:`start_server` writes nothing itself: it runs ``python -m blowfish_nb.service.cli serve <config>`` with
stdout and stderr going to files beside the configuration, reads the tokens and the URL the command prints
("token for new analyst NAME: TOKEN", "... serving [...] at http://HOST:PORT"), and waits until ``/healthz``
answers. Fixtures ``spawn`` (per test) and ``module_spawn`` (per module) kill every server they started.

:func:`check_body` is the leak check every response of these tests goes through: no traceback, no path of the
server's files, no source file name.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from blowfish_nb import datasets

#: rows of the served data (small: every server counts every column when it starts)
ROWS = 2000
#: the served columns: salary at k = 4,096 bins, age at 62, department (5 public categories)
COLUMNS = {
    "salary": {"bins": 4096, "bounds": [0, 250000], "policy": "line"},
    "age": {"bins": 62, "bounds": [18, 80], "policy": "line"},
    "department": {"bins": ["engineering", "sales", "operations", "research", "support"], "policy": "bounded"},
    # a second 4,096-bin column: salary × bonus has 16.8 million cells, above the cell limit (10 million)
    "bonus": {"bins": 4096, "bounds": [0, 250000], "policy": "line"},
}
#: seconds a server may take to print its URL and answer /healthz
START_TIMEOUT = 60.0
_SERVING = re.compile(r"serving .* at (http://\S+)")
_TOKEN = re.compile(r"token for new analyst (\S+): (\S+)")
#: what a leaked traceback or file name looks like in a response body
_LEAKS = (re.compile(r"Traceback"), re.compile(r'File "'), re.compile(r"\.py\b"), re.compile(r"site-packages"),
          re.compile(r"(?:^|[\s\"'(=])/(?!v1/)(?:[\w.+-]+/)+[\w.+-]*"))  # a path, not one of the API's routes


@dataclass
class Served:
    """One ``blowfish-nb serve`` process: its URL, the tokens it printed, its files."""

    process: subprocess.Popen
    config: Path
    url: str
    port: int
    tokens: dict[str, str]
    stdout: Path
    stderr: Path
    clients: list = field(default_factory=list)

    @property
    def folder(self) -> Path:
        return self.config.parent

    @property
    def ledger(self) -> Path:
        return self.folder / "ledger.db"

    def client(self, analyst: str | None = None, token: str | None = None, **kw) -> httpx.Client:
        """An httpx client on this server, authenticated as ``analyst`` (or with ``token``; neither: no header)."""
        token = self.tokens[analyst] if analyst is not None else token
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        c = httpx.Client(base_url=self.url, headers=headers, timeout=kw.pop("timeout", 60.0), **kw)
        self.clients.append(c)
        return c

    def kill(self) -> None:
        """SIGKILL: no clean-up of any kind (a crash)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self._close_clients()

    def stop(self) -> None:
        """SIGTERM and wait (uvicorn shuts down, the ledger is closed)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        self._close_clients()

    def _close_clients(self) -> None:
        for c in self.clients:
            c.close()
        self.clients.clear()


def write_data(folder: Path, seed: int = 14) -> Path:
    """The served rows as a CSV: salaries(n=ROWS) plus ``bonus`` (a copy of salary, for the cell-limit case)."""
    df = datasets.salaries(n=ROWS, seed=seed)
    df["bonus"] = df["salary"]
    path = folder / "data.csv"
    df.to_csv(path, index=False)
    return path


def write_config(folder: Path, accounts: dict[str, float], analysts: dict[str, str], *, data: Path,
                 rate: float = 1000.0, burst: int = 1000, port: int = 0, name: str = "service.toml",
                 auth_burst: int = 10_000, client_burst: int = 100_000, init: bool = True) -> Path:
    """A service TOML in ``folder`` (ledger ``folder/ledger.db``) serving :data:`COLUMNS` of ``data``.

    With ``init`` (and no ledger there yet) the ledger is made as a curator does, ``blowfish-nb init --config``
    (in this process; the key is the tests' ``$BLOWFISH_LEDGER_KEY``).
    """
    lines = ["[data]", f"path = {json.dumps(str(data))}", ""]
    for col, spec in COLUMNS.items():
        lines.append(f"[columns.{col}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in spec.items()]
        lines.append("")
    lines += ["[ledger]", 'path = "ledger.db"', "", "[accounts]"]
    lines += [f"{k} = {float(v)!r}" for k, v in accounts.items()]
    lines += ["", "[analysts]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in analysts.items()]
    lines += ["", "[server]", 'host = "127.0.0.1"', f"port = {port}", f"rate = {float(rate)!r}", f"burst = {burst}",
              f"auth_burst = {auth_burst}", f"client_burst = {client_burst}", "client_rate = 100000.0"]
    path = folder / name
    path.write_text("\n".join(lines) + "\n")
    if init and not (folder / "ledger.db").exists():
        from blowfish_nb.service.cli import main

        assert main(["init", "--config", str(path)]) == 0
    return path


def start_server(config: Path, *, port: int | None = None, tokens: dict[str, str] | None = None) -> Served:
    """Run ``blowfish-nb serve config`` and wait until it answers; ``tokens`` adds tokens printed by earlier runs."""
    folder = config.parent
    n = len(list(folder.glob("serve-*.out")))
    out, err = folder / f"serve-{n}.out", folder / f"serve-{n}.err"
    cmd = [sys.executable, "-m", "blowfish_nb.service.cli", "serve", str(config)]
    if port is not None:
        cmd += ["--port", str(port)]
    with open(out, "wb") as fo, open(err, "wb") as fe:
        process = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, cwd=folder,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + START_TIMEOUT
    url = None
    while url is None:
        text = out.read_text()
        found = _SERVING.search(text)
        if found:
            url = found.group(1)
            break
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            process.wait()
            raise RuntimeError(f"blowfish-nb serve did not start (status {process.returncode}):\n{err.read_text()}")
        time.sleep(0.05)
    printed = dict(_TOKEN.findall(out.read_text()))
    served = Served(process, config, url, int(url.rsplit(":", 1)[1]), {**(tokens or {}), **printed}, out, err)
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=2.0).status_code == 200:
                return served
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            served.kill()
            raise RuntimeError(f"blowfish-nb serve never answered /healthz:\n{err.read_text()}")
        time.sleep(0.05)


def run_cli(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """``blowfish-nb ARGS`` in a fresh interpreter (text output captured)."""
    return subprocess.run([sys.executable, "-m", "blowfish_nb.service.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def free_port() -> int:
    """A port nothing listens on now (the OS's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:port."""
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def check_body(response: httpx.Response, *, folder: Path | None = None) -> str:
    """The response's text, after checking it leaks no traceback, source file or server path."""
    text = response.text
    for pattern in _LEAKS:
        assert not pattern.search(text), f"response {response.status_code} leaks {pattern.pattern!r}: {text[:300]}"
    if folder is not None:
        assert str(folder) not in text, f"response {response.status_code} names the server's folder: {text[:300]}"
    return text


def check_error(response: httpx.Response, status: int | tuple[int, ...], error: str | None = None, *,
                folder: Path | None = None) -> str:
    """An error response: the status, exactly ``{"error", "message"}``, no leak; returns the message."""
    check_body(response, folder=folder)
    wanted = (status,) if isinstance(status, int) else status
    assert response.status_code in wanted, (response.status_code, response.text[:300])
    data = response.json()
    assert isinstance(data, dict) and set(data) == {"error", "message"}, data
    assert isinstance(data["message"], str) and data["message"], data
    if error is not None:
        assert data["error"] == error, data
    return data["message"]


def budget_of(client: httpx.Client) -> dict:
    """``/v1/budget`` of the client's account (checked for leaks)."""
    r = client.get("/v1/budget")
    check_body(r)
    assert r.status_code == 200, r.text
    return r.json()


def entries_of(client: httpx.Client) -> list[dict]:
    """``/v1/ledger`` entries of the client's account."""
    r = client.get("/v1/ledger")
    check_body(r)
    assert r.status_code == 200, r.text
    return r.json()["entries"]


def spent_matches_entries(client: httpx.Client) -> tuple[float, list[dict]]:
    """Check that the account's spent is the exact sum of its ledger entries' ε; return both."""
    spent, entries = budget_of(client)["spent"], entries_of(client)
    assert math.isclose(spent, math.fsum(e["epsilon"] for e in entries), rel_tol=0, abs_tol=1e-9), (spent, entries)
    return spent, entries


def _spawner():
    started: list[Served] = []

    def spawn(config: Path, **kw) -> Served:
        served = start_server(config, **kw)
        started.append(served)
        return served

    return spawn, started


@pytest.fixture(scope="session")
def data_csv(tmp_path_factory) -> Path:
    """The served rows, written once per test run."""
    return write_data(tmp_path_factory.mktemp("service-data"))


@pytest.fixture
def spawn():
    """``spawn(config, port=None, tokens=None)`` → a running :class:`Served`; every one is killed after the test."""
    fn, started = _spawner()
    yield fn
    for s in started:
        s.kill()


@pytest.fixture(scope="module")
def module_spawn():
    """:func:`spawn` for module-scoped servers."""
    fn, started = _spawner()
    yield fn
    for s in started:
        s.kill()
