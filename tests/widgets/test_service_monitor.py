"""ServiceMonitor: the curator's widget on a real server (uvicorn on a free port, HTTP from a RemoteSession)."""

import re
import threading

import pytest

import blowfish_nb as bf
from blowfish_nb import datasets
from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.service.ledger import AuthError
from blowfish_nb.widgets import ServiceMonitor

ROW = re.compile(r"<tr>((?:<td>.*?</td>)+)</tr>")


def rows(table_html: str) -> list[list[str]]:
    """The body cells of one of the monitor's HTML tables."""
    return [re.findall(r"<td>(.*?)</td>", r) for r in ROW.findall(table_html)]


@pytest.fixture
def server(tmp_path):
    srv = bf.serve(datasets.salaries(n=1500, seed=7), bins={"age": 31, "salary": 50},
                   policy={"age": "line", "salary": "dp"}, ledger=tmp_path / "ledger.db",
                   accounts={"course": 1.0, "lab": 2.0}, analysts={"ana": "course", "ben": "course", "cy": "lab"},
                   create=True)
    yield srv
    if srv.running:
        srv.stop()


def test_shows_the_url_accounts_and_analysts_before_any_release(server):
    m = server.monitor()
    assert isinstance(m, ServiceMonitor)
    assert server.url in m.header.value and "serving" in m.header.value
    assert list(m.bars) == ["course", "lab"]
    assert [(b.value, b.max) for b in m.bars.values()] == [(0.0, 1.0), (0.0, 2.0)]
    assert rows(m.analysts.value) == [["ana", "course", "active", "never"], ["ben", "course", "active", "never"],
                                      ["cy", "lab", "active", "never"]]
    assert rows(m.releases.value) == [] and "no release" in m.releases.value
    assert list(m.account_dropdown.options) == ["course", "lab"]
    assert list(m.revoke_dropdown.options) == ["ana", "ben", "cy"]


def test_a_release_refreshes_values_from_the_server_thread_without_building_widgets(server):
    m = server.monitor()
    cells_before = list(m.accounts.children)
    ana = bf.connect(server.url, server.tokens["ana"])
    r = ana.release("histogram", "age", epsilon=0.25)
    # no refresh() call: the server's release callback put the new values in (before answering the request)
    assert m.bars["course"].value == pytest.approx(0.25) and m.bars["lab"].value == 0.0
    assert list(m.accounts.children) == cells_before  # the same widgets, new values
    course = m.accounts.children[5:10]  # header row, then one row per account
    assert [c.value for c in course[1:4]] == ["1", "0.25", "0.75"]
    (row,) = rows(m.releases.value)
    # exactly these six facts: no answer (nor any other number) reaches the curator's table
    assert row[1:] == ["ana", "histogram", "age", "0.25", r.mechanism]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", row[0])
    seen = {a[0]: a[3] for a in rows(m.analysts.value)}
    assert seen["ana"] != "never" and seen["ben"] == "never" and seen["cy"] == "never"


def test_a_refused_release_changes_nothing_shown(server):
    m = server.monitor()
    ben = bf.connect(server.url, server.tokens["ben"])
    ben.release("histogram", "salary", epsilon=0.6)
    with pytest.raises(bf.exceptions.BudgetExceededError):
        ben.release("histogram", "salary", epsilon=0.6)
    assert m.bars["course"].value == pytest.approx(0.6) and len(rows(m.releases.value)) == 1


def test_concurrent_releases_leave_the_monitor_equal_to_the_ledger(server):
    """Callbacks from several server threads at once: the last refresh shows every committed charge."""
    m = server.monitor()
    sessions = [bf.connect(server.url, server.tokens[a]) for a in ("ana", "ben", "cy")]
    errors = []

    def spend(s):
        for _ in range(4):
            try:
                s.release("histogram", "age", epsilon=0.1)
            except bf.exceptions.BlowfishError as exc:  # pragma: no cover - reported below
                errors.append(exc)

    threads = [threading.Thread(target=spend, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    books = {a["account"]: a["spent"] for a in server.service.status()["accounts"]}
    assert books == pytest.approx({"course": 0.8, "lab": 0.4})
    assert {k: b.value for k, b in m.bars.items()} == pytest.approx(books)
    assert len(rows(m.releases.value)) == m.recent == 10


def test_add_shows_a_working_token_once_and_revoke_ends_access(server):
    m = server.monitor()
    m.name_text.value, m.account_dropdown.value = "dee", "lab"
    m.add_button.click()
    token = re.search(r"<code>([A-Za-z0-9_-]+)</code>", m.token.value).group(1)
    assert "shown once" in m.token.value and m.name_text.value == ""
    dee = bf.connect(server.url, token)
    assert dee.analyst == "dee" and dee.budget == 2.0
    assert ["dee", "lab", "active"] == rows(m.analysts.value)[-1][:3]
    m.refresh()
    assert m.token.value == ""  # shown once: gone at the next action

    m.name_text.value = "dee"  # the same name again is refused, no token shown
    m.add_button.click()
    assert "not added" in m.message.value and m.token.value == ""

    m.revoke_dropdown.value = "dee"
    m.revoke_button.click()
    assert "revoked dee" in m.message.value and "dee" not in m.revoke_dropdown.options
    assert rows(m.analysts.value)[-1][:3] == ["dee", "lab", "revoked"]
    with pytest.raises(AuthError) as info:
        dee.release("histogram", "age", epsilon=0.1)
    assert info.value.status == 403


def test_a_refresh_from_a_release_keeps_the_analyst_chosen_for_revoking(server):
    """New options arrive with a refresh (an analyst added elsewhere); Revoke must still act on the chosen one."""
    m = server.monitor()
    m.revoke_dropdown.value = "cy"
    server.add_analyst("eve", "course")
    bf.connect(server.url, server.tokens["ana"]).release("histogram", "age", epsilon=0.1)
    assert "eve" in m.revoke_dropdown.options and m.revoke_dropdown.value == "cy"


def test_a_stopped_service_is_shown_stopped_and_a_closed_monitor_is_left_alone(server):
    m = server.monitor()
    other = server.monitor()
    other.close()
    bf.connect(server.url, server.tokens["cy"]).release("histogram", "age", epsilon=0.5)
    assert m.bars["lab"].value == pytest.approx(0.5) and other.bars["lab"].value == 0.0
    server.stop()
    m.refresh()
    assert "stopped" in m.header.value and "no status" in m.message.value


def test_refuses_what_is_not_a_server(server):
    with pytest.raises(InvalidParameterError, match="blowfish_nb.serve"):
        ServiceMonitor(server.service)
    with pytest.raises(InvalidParameterError, match="recent must be a positive integer, got 0"):
        ServiceMonitor(server, recent=0)
