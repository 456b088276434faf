"""AnalystPanel on a RemoteSession (a real server on a free port): the same panel, the service's refusals, few requests."""

from collections import Counter

import pytest

import blowfish_nb as bf
from blowfish_nb import datasets
from blowfish_nb.exceptions import BlowfishError, InvalidParameterError
from blowfish_nb.widgets import AnalystPanel


@pytest.fixture
def server(tmp_path):
    srv = bf.serve(datasets.salaries(n=2000, seed=4), bins={"age": 31, "salary": 50},
                   policy={"age": "line", "salary": "dp"}, ledger=tmp_path / "ledger.db",
                   accounts={"course": 1.0}, analysts={"ana": "course", "ben": "course"}, create=True)
    yield srv
    srv.stop()


@pytest.fixture
def remote(server):
    s = bf.connect(server.url, server.tokens["ana"])
    yield s
    s.close()


def counting(session) -> Counter:
    """Count the session's HTTP requests by path from now on."""
    calls = Counter()
    session._http.event_hooks["request"].append(lambda request: calls.update([request.url.path]))
    return calls


def test_two_runs_charge_the_service_and_the_bar_shows_its_books(server, remote):
    panel = AnalystPanel(remote, alpha=60, beta=0.05)
    q = remote.quote("histogram", "age", accuracy=(60, 0.05))
    assert panel.quoted_epsilon == pytest.approx(q.epsilon) and server.service.ledger.spent("ana") == 0
    assert f"ε = {q.epsilon:.4g}" in panel.cost.value and q.mechanism.name in panel.cost.value
    r1 = panel.run()
    panel.query_dropdown.value = "cumulative"
    e2 = panel.quoted_epsilon
    r2 = panel.run()
    spent = server.service.ledger.spent("ana")  # the server's books, not the client's
    assert spent == pytest.approx(q.epsilon + e2) and r1.epsilon + r2.epsilon == pytest.approx(spent)
    assert panel.budget_bar.value == pytest.approx(1 - spent) == pytest.approx(remote.remaining)
    assert f"ε left <b>{1 - spent:.4g}</b> of 1" in panel.budget_label.value
    assert panel.history.value.count("<tr><td>") == 2 and len(remote.ledger) == 2
    assert panel.compare_bars.y.shape == (2, 31) and r2.accuracy == (60.0, 0.05)


def test_the_service_refuses_an_over_budget_query_and_charges_nothing(server, remote):
    panel = AnalystPanel(remote, alpha=60, beta=0.05)
    panel.run()
    spent = server.service.ledger.spent("ana")
    panel.alpha_text.value = 2  # far too accurate for what is left
    assert panel.quoted_epsilon > 1 - spent and "more than the" in panel.cost.value
    assert panel.run() is None
    assert "refused" in panel.message.value and "nothing was computed or charged" in panel.message.value
    assert server.service.ledger.spent("ana") == spent and len(remote.ledger) == 1 and len(panel.releases) == 1
    assert panel.budget_bar.value == pytest.approx(1 - spent)


def test_a_bad_request_is_explained_as_the_service_words_it(remote):
    panel = AnalystPanel(remote, alpha=60, beta=0.05)
    panel.beta_text.value = 0.0  # the service validates β > 0
    assert panel.quoted_epsilon is None and "cannot quote" in panel.cost.value and "accuracy" in panel.cost.value


def test_the_bar_shows_spending_by_another_analyst_on_the_account_after_a_run(server, remote):
    panel = AnalystPanel(remote, alpha=60, beta=0.05)
    ben = bf.connect(server.url, server.tokens["ben"])
    ben.release("histogram", "salary", epsilon=0.3)
    r = panel.run()
    assert panel.budget_bar.value == pytest.approx(1 - 0.3 - r.epsilon)


def test_the_panel_asks_the_server_little(remote):
    """Quotes are remembered; the budget and the ledger are read once at the start and once per Run."""
    calls = counting(remote)
    panel = AnalystPanel(remote, alpha=60, beta=0.05)
    assert calls == Counter({"/v1/budget": 2, "/v1/quote": 1, "/v1/ledger": 1})
    calls.clear()
    for alpha in (40, 10, 40, 60, 10):  # three distinct requests, one already quoted
        panel.alpha_text.value = alpha
    assert calls == Counter({"/v1/quote": 2})
    calls.clear()
    panel.run()
    assert calls == Counter({"/v1/release": 1, "/v1/budget": 2, "/v1/ledger": 1})  # the next quote is remembered


def test_a_remote_session_cannot_take_a_seed(remote):
    with pytest.raises(InvalidParameterError, match="reproducible=True"):
        AnalystPanel(remote, rng=0)


def test_an_object_without_the_session_protocol_is_refused_by_name(remote):
    class Half:
        budget = 1.0

        def quote(self, *a, **k): ...

        def release(self, *a, **k): ...

    with pytest.raises(BlowfishError, match=r"Half has no remaining, spent, columns, attribute, column_policy, "
                                            r"reproducible$"):
        AnalystPanel(Half())
    with pytest.raises(BlowfishError, match="str has no"):
        AnalystPanel("http://127.0.0.1:8765")
    calls = counting(remote)  # checking the protocol reads no property (each would be a request)
    from blowfish_nb.widgets.analyst import _check_session

    _check_session(remote)
    assert not calls


def test_a_panel_opened_after_releases_in_code_lists_them(remote):
    """Issue 28 (3): after remote.release(...) in code the panel's history is not empty while the bar says spent."""
    remote.release("histogram", "salary", epsilon=0.3)
    panel = AnalystPanel(remote, alpha=60, beta=0.05)
    assert panel.history.value.count("<tr><td>") == 1 and "histogram of salary" in panel.history.value
    assert "spent 0.3" in panel.budget_label.value
    r = panel.run()
    assert panel.history.value.count("<tr><td>") == 2 and panel.compare_bars.labels == ["#2 histogram of age"]
    assert r.epsilon > 0
