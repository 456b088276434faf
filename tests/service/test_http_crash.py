"""The analyst service killed and restarted (issue 14): no committed charge lost, retries charged once, edits found.

* SIGKILL mid-burst, restart on the same ledger: every answer a client received is in the ledger, re-sending its
  request id returns the same answers without a charge, spent is the sum of the entries, the chain verifies;
* a RemoteSession release started while the server is down succeeds once it is back (charged once);
* an edited event in the SQLite file stops ``blowfish-nb serve`` at start-up (status 2, the event named).
"""

from __future__ import annotations

import math
import signal
import sqlite3
import threading
import time
from dataclasses import dataclass

import httpx
import pytest

import blowfish_nb as bf
from blowfish_nb.service.client import RETRY_FOR
from blowfish_nb.service.ledger import Ledger

from .conftest import (Served, budget_of, check_body, free_port, listening, run_cli, spent_matches_entries,
                       write_config)

pytestmark = pytest.mark.timeout(300)

EPSILON = 0.01
#: what the burst sends, in turn: a k = 4,096 histogram (the slow one: most likely in flight at the kill) and ranges
BODIES = ({"query": "histogram", "columns": "salary", "epsilon": EPSILON},
          {"query": "range", "columns": "age", "ranges": [[18, 30], [30, 50]], "epsilon": EPSILON})


def _committed(ledger, analyst: str = "ana") -> dict[str, float]:
    """request id → ε of every charge to ``analyst`` in the ledger file (read directly, as the curator could)."""
    with sqlite3.connect(f"file:{ledger}?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT request_id, epsilon FROM events WHERE kind IN ('charge', 'failed') AND "
                                 "analyst = ?", (analyst,)))


@dataclass
class Crash:
    """What happened around one SIGKILL (see :func:`crash`)."""

    killed: Served
    restarted: Served
    sent: dict[str, dict]  # request id → body, for every release the burst sent
    received: dict[str, dict]  # request id → response, for every answer the burst received
    committed: dict[str, float]  # request id → ε, the charges in the file the killed server left
    waiting: dict  # the RemoteSession release started while the server was down: its result, or its error
    bob: object  # that RemoteSession
    seconds_down: float  # from the release's start to its return


@pytest.fixture(scope="module")
def crash(tmp_path_factory, data_csv, module_spawn, threads=4, kill_after=16):
    """ana's burst of releases (4 threads) is cut by SIGKILL after ``kill_after`` answers; bob's RemoteSession
    release starts while nothing listens; the server restarts on the same port and ledger."""
    config = write_config(tmp_path_factory.mktemp("crash"), {"burst": 100.0, "lab": 1.0},
                          {"ana": "burst", "bob": "lab"}, data=data_csv)
    served = module_spawn(config)
    bob = bf.connect(served.url, served.tokens["bob"])
    assert len(bob.release("histogram", "age", epsilon=0.125).answers) == 62
    received: dict[str, dict] = {}
    sent: dict[str, dict] = {}
    lock = threading.Lock()
    enough = threading.Event()

    def burst(t):
        headers = {"Authorization": f"Bearer {served.tokens['ana']}"}
        with httpx.Client(base_url=served.url, headers=headers, timeout=60) as client:
            for i in range(10_000):
                body = {**BODIES[(t + i) % 2], "request_id": f"t{t}-{i}"}
                with lock:
                    sent[body["request_id"]] = body
                try:
                    r = client.post("/v1/release", json=body)
                except httpx.TransportError:
                    return  # the server died under this request
                check_body(r, folder=served.folder)
                assert r.status_code == 200, r.text
                with lock:
                    received[body["request_id"]] = r.json()
                    if len(received) >= kill_after:
                        enough.set()

    workers = [threading.Thread(target=burst, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    assert enough.wait(timeout=120)
    served.kill()  # SIGKILL while the other threads' releases are in flight
    for w in workers:
        w.join(timeout=60)
    assert served.process.returncode == -signal.SIGKILL
    committed = _committed(served.ledger)

    waiting: dict = {}

    def release():
        try:
            waiting["release"] = bob.release("range", "salary", ranges=[(0, 50000), (50000, 250000)], epsilon=0.25)
        except Exception as error:  # noqa: BLE001 (the test reports it)
            waiting["error"] = error

    started = time.monotonic()
    worker = threading.Thread(target=release)
    worker.start()
    time.sleep(1.0)
    waiting["alive while down"] = worker.is_alive() and not listening(served.port)  # retrying against nothing
    restarted = module_spawn(config, port=served.port, tokens=served.tokens)
    worker.join(timeout=RETRY_FOR + 30)
    assert not worker.is_alive()
    yield Crash(served, restarted, sent, received, committed, waiting, bob, time.monotonic() - started)
    bob.close()


def test_a_server_killed_mid_burst_loses_no_committed_charge(crash):
    received, sent, committed = crash.received, crash.sent, crash.committed
    assert set(received) <= set(committed)  # every answer a client holds was charged: none lost
    in_flight = set(sent) - set(received)
    assert in_flight and set(committed) <= set(sent)

    client = crash.restarted.client("ana")
    spent, entries = spent_matches_entries(client)
    assert len(entries) == len(committed)
    assert math.isclose(spent, EPSILON * len(committed), rel_tol=0, abs_tol=1e-9)

    # the answers a client received come back for their request ids, nothing charged again
    for rid, answer in sorted(received.items()):
        r = client.post("/v1/release", json=sent[rid])
        check_body(r, folder=crash.restarted.folder)
        assert r.status_code == 200 and r.json() == answer, rid
    assert spent_matches_entries(client) == (spent, entries)
    # a request the killed server committed but whose answer was lost is replayed too; one it never
    # committed is released now, charged once
    for rid in sorted(in_flight):
        r = client.post("/v1/release", json=sent[rid])
        check_body(r, folder=crash.restarted.folder)
        assert r.status_code == 200, r.text
        again = client.post("/v1/release", json=sent[rid])
        assert again.status_code == 200 and again.json()["answers"] == r.json()["answers"]
    spent_after, entries_after = spent_matches_entries(client)
    assert len(entries_after) == len(set(committed) | in_flight)
    assert math.isclose(spent_after, EPSILON * len(entries_after), rel_tol=0, abs_tol=1e-9)
    assert set(_committed(crash.restarted.ledger)) == set(committed) | in_flight

    # the file both servers wrote verifies (a second process, while the restarted server runs)
    with Ledger(crash.restarted.ledger) as ledger:
        count, _ = ledger.verify()
    assert count == 4 + len(entries_after) + 2  # two accounts, two analysts, ana's charges, bob's two


def test_a_release_started_while_the_server_is_down_succeeds_when_it_returns(crash):
    assert crash.waiting["alive while down"]
    assert "error" not in crash.waiting, crash.waiting.get("error")
    assert crash.seconds_down < RETRY_FOR
    r = crash.waiting["release"]
    assert len(r.answers) == 2 and r.epsilon == 0.25
    assert crash.bob.spent == 0.375 and len(crash.bob.ledger) == 2  # charged once, for all the client's attempts
    assert spent_matches_entries(crash.restarted.client("bob"))[0] == 0.375


def test_a_tampered_event_stops_the_server_at_start_up(tmp_path, data_csv, spawn):
    config = write_config(tmp_path, {"lab": 1.0}, {"ana": "lab"}, data=data_csv)
    served = spawn(config)
    client = served.client("ana")
    for i in range(3):
        r = client.post("/v1/release", json={"columns": "age", "epsilon": 0.125, "request_id": f"r{i}"})
        assert r.status_code == 200, r.text
    assert budget_of(client)["spent"] == 0.375
    served.stop()

    with sqlite3.connect(served.ledger) as conn:
        seq = conn.execute("SELECT seq FROM events WHERE request_id = 'r1'").fetchone()[0]
        triggers = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"))
        for name in triggers:
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("UPDATE events SET epsilon = 0.001 WHERE seq = ?", (seq,))  # a cheaper past release
    port = free_port()
    refused = run_cli("serve", str(config), "--port", str(port))
    assert refused.returncode == 2, (refused.returncode, refused.stderr)
    assert f"event {seq} (charge by ana) was altered" in refused.stderr, refused.stderr
    assert "LedgerIntegrityError" in refused.stderr and "Traceback" not in refused.stderr
    assert "serving" not in refused.stdout and "token" not in refused.stdout
    assert not listening(port)

    # the control: with the row and the triggers put back, the same file passes the check serve runs
    with sqlite3.connect(served.ledger) as conn:
        conn.execute("UPDATE events SET epsilon = 0.125 WHERE seq = ?", (seq,))
        for sql in triggers.values():
            conn.execute(sql)
    with Ledger(served.ledger) as ledger:
        assert ledger.spent("ana") == 0.375 and len(ledger.entries("ana")) == 3


def test_ctrl_c_stops_the_server_without_a_traceback(tmp_path, data_csv, spawn):
    served = spawn(write_config(tmp_path, {"lab": 1.0}, {"ana": "lab"}, data=data_csv))
    served.process.send_signal(signal.SIGINT)
    served.process.wait(timeout=30)
    assert served.process.returncode in (0, 130, -signal.SIGINT)
    assert not listening(served.port)
    assert "Traceback" not in served.stderr.read_text(), served.stderr.read_text()[-500:]
