"""The service's engine: the data, the catalog and the ledger behind one narrow, analyst-facing API.

:class:`Service` is what the HTTP app (:mod:`blowfish_nb.service.app`) calls
for every request, after authenticating the token. Analysts name queries,
columns, (α, β) or ε, and a mechanism from the vetted list; they never pass
seeds or objects. Noise comes from OS entropy only.

A release runs in three steps:

1. its plan and ε come from public facts (the quote; cached per request);
2. the noise is drawn on the counts (counted once per set of columns; every
   column is checked against its bins when the service starts, so no release
   can fail on the data's values);
3. the check-and-charge and the stored answer are one ``BEGIN IMMEDIATE``
   transaction in the ledger (:mod:`blowfish_nb.service.ledger`).

A server killed before step 3 commits has charged nothing; killed after, a
retry with the same request id returns the stored answers and charges
nothing again.
"""

from __future__ import annotations

import json  # noqa: F401  (the example reads a response)
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..exceptions import BlowfishError, BudgetExceededError, DataDerivedBinsWarning, DomainError, InvalidParameterError
from ..analysis.selection import memo_scope
from ..planning import MECHANISMS, Budgeted, Catalog, Request, execute, histogram
from ..queries import QUERIES
from .ledger import Ledger
from .wire import as_request, encode_release

__all__ = ["Service", "RequestConflict"]

#: quotes kept per service (a quote depends on public inputs only, so it can be reused by anyone)
QUOTE_CACHE = 512


class RequestConflict(BlowfishError):
    """A request id was used before for a different request (a retry must repeat the request exactly)."""


class Service:
    """The curator's side of the analyst service: data, bins, policies, budgets and the ledger.

    Parameters
    ----------
    data : pandas.DataFrame (or dask.dataframe.DataFrame)
        The rows. They never leave this object; analysts receive noisy answers only.
    bins, policy, bounds
        The queryable columns, their bins and per-column policies, as for
        :class:`blowfish_nb.Session` (public facts, shown to every analyst).
    ledger : str or path-like
        The SQLite ledger file (verified when opened: a tampered file stops
        the service here).
    key_file : str or path-like, optional
        The ledger's key file (mode 0600, outside the ledger's folder; its
        folder keeps the witness head). Default: ``$BLOWFISH_LEDGER_KEY``.
    create : bool, default False
        Make a new ledger (and key file) when ``ledger`` does not exist;
        otherwise a missing ledger is refused.
    accounts : dict, optional
        Account → total ε. An account that exists keeps its spending; a
        different budget here is recorded as a budget change.
    analysts : dict, optional
        Analyst → account. Analysts new to the ledger get a token, in
        :attr:`new_tokens` (hand each to its analyst; the ledger keeps only
        its hash, and analysts added later get theirs from :meth:`add_analyst`).

    Examples
    --------
    >>> import tempfile, os
    >>> from blowfish_nb import datasets
    >>> path, key = os.path.join(tempfile.mkdtemp(), "ledger.db"), os.path.join(tempfile.mkdtemp(), "ledger.key")
    >>> svc = Service(datasets.salaries(n=500, seed=1), bins={"age": 31}, policy="line", ledger=path,
    ...               key_file=key, create=True, accounts={"course": 1.0}, analysts={"ana": "course"})
    >>> q = svc.quote("ana", Request("histogram", "age", accuracy=(25, 0.05)))
    >>> q["mechanism"], q["epsilon"] < 1.0
    ('Transformed+Laplace', True)
    >>> r = json.loads(svc.release("ana", {"columns": "age", "epsilon": 0.25}, "req-1"))
    >>> len(r["answers"]), svc.ledger.remaining("ana")
    (31, 0.75)
    >>> svc.close()
    """

    def __init__(self, data, *, bins: Mapping, policy="dp", bounds: Mapping | None = None, ledger,
                 accounts: Mapping[str, float] | None = None, analysts: Mapping[str, str] | None = None,
                 key_file=None, create: bool = False):
        self.catalog = _public_catalog(data, bins, policy, bounds)
        self._data = data
        self._counts: dict[tuple[str | None, tuple[str, ...]], np.ndarray] = {}
        self._counts_lock = threading.Lock()
        self._counting: dict[tuple[str | None, tuple[str, ...]], threading.Lock] = {}
        self._check_fit()
        self.ledger = Ledger(Path(ledger), key_file=key_file, create=create)
        self.new_tokens: dict[str, str] = {}
        try:
            self._declare(accounts or {}, analysts or {})
        except BaseException:
            self.ledger.close()
            raise
        self._quotes: dict[str, OrderedDict[str, Budgeted]] = {}  # per analyst
        self._quotes_lock = threading.Lock()
        self._seen: dict[str, float] = {}
        self._recent: list[dict] = []
        self._listeners: list[Callable[[dict], None]] = []

    # -- curator ---------------------------------------------------------------------------
    def _declare(self, accounts: Mapping, analysts: Mapping) -> None:
        existing = {a["account"]: a for a in self.ledger.accounts()}
        for name, budget in accounts.items():
            if name not in existing:
                self.ledger.add_account(name, budget)
            elif float(budget) != existing[name]["budget"]:
                self.ledger.set_budget(name, budget)
        known = {a["analyst"]: a for a in self.ledger.analysts()}
        for name, account in analysts.items():
            if name not in known:
                self.new_tokens[name] = self.ledger.add_analyst(name, account)
            elif known[name]["account"] != account:
                raise InvalidParameterError(
                    f"analyst {name!r} is on account {known[name]['account']!r} in the ledger, not {account!r}; an "
                    "analyst's account cannot change (add a new analyst instead)")

    def add_analyst(self, name: str, account: str) -> str:
        """Add an analyst on ``account`` and return their token (shown once: it is kept nowhere in clear)."""
        return self.ledger.add_analyst(name, account)

    def revoke(self, name: str) -> None:
        """Revoke an analyst's token: every later request with it gets 403."""
        self.ledger.revoke(name)

    def status(self) -> dict:
        """What the curator's monitor shows: accounts, analysts (with when each was last seen), recent releases."""
        seen = dict(self._seen)
        analysts = [{**a, "last_request": _iso(seen.get(a["analyst"]))} for a in self.ledger.analysts()]
        return {"accounts": self.ledger.accounts(), "analysts": analysts, "recent": list(self._recent[-20:])}

    def on_release(self, callback: Callable[[dict], None]) -> Callable[[], None]:
        """Call ``callback(entry)`` after every charged release (the curator's monitor refreshes on it).

        Returns a function that removes the callback again.
        """
        self._listeners.append(callback)

        def remove() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return remove

    def close(self) -> None:
        """Close the ledger."""
        self.ledger.close()

    # -- analyst API (after authentication) ------------------------------------------------
    def seen(self, analyst: str) -> None:
        """Record that ``analyst`` made a request now (who is connected)."""
        self._seen[analyst] = time.time()

    def describe(self, analyst: str) -> dict:
        """The public facts an analyst works from: columns, bins, policies, mechanisms, queries, own budget."""
        return {
            "catalog": self.catalog.to_dict(),
            "columns": self.catalog.columns,
            "policies": {c: self.catalog.column_policy(c).summary() for c in self.catalog.columns},
            "mechanisms": ["auto", *sorted(MECHANISMS)],
            "queries": list(QUERIES),
            "analyst": analyst,
            **self.budget(analyst),
        }

    def budget(self, analyst: str) -> dict:
        """``{budget, spent, remaining}`` of the analyst's account."""
        return self.ledger.balance(analyst)

    def entries(self, analyst: str) -> list[dict]:
        """The ledger entries of the analyst's account (releases only, in order)."""
        return self.ledger.entries(analyst)

    def quote(self, analyst: str, request: Request | Mapping) -> dict:
        """What a release would cost (ε and mechanism), from public facts; nothing is read or charged.

        ``request`` is a :class:`~blowfish_nb.planning.Request` (names only, no objects) or its JSON object.
        """
        req = as_request(request)
        b = self._budgeted(analyst, req)
        return {"epsilon": float(b.epsilon), "mechanism": b.mechanism.name, "linear": bool(b.mechanism.linear),
                "accuracy": None if req.accuracy is None else list(req.accuracy), "query": b.plan.query.name,
                "columns": list(b.plan.columns), "remaining": self.ledger.remaining(analyst)}

    def release(self, analyst: str, request: Request | Mapping, request_id: str) -> str:
        """Release a query and charge the analyst's account; returns the JSON the analyst receives.

        A request id seen before returns the stored answers (nothing charged
        again) when the request is the same, and is refused otherwise.

        Raises
        ------
        BudgetExceededError
            The account cannot pay; nothing is charged.
        RequestConflict
            ``request_id`` was used for another request.
        """
        req = as_request(request)
        key = req.to_json()  # canonical: what a retry must repeat exactly
        previous = self.ledger.outcome(analyst, request_id)
        if previous is not None:
            return self._replay(previous, key, request_id)
        b = self._budgeted(analyst, req)
        left = self.ledger.remaining(analyst)
        if b.epsilon > left + 1e-12:  # refused before the counts are touched (the ledger checks again, atomically)
            raise BudgetExceededError(
                f"this release needs ε = {b.epsilon:.4g} but the account has {left:.4g} of "
                f"{self.ledger.budget(analyst):g} left; nothing was computed or charged")
        entry = {"query": b.plan.query.name, "columns": ", ".join(b.plan.columns), "epsilon": float(b.epsilon),
                 "policy": b.plan.policy.summary(), "mechanism": b.mechanism.name, "request": key}
        x = self._histogram(tuple(b.plan.columns), analyst)
        try:
            result = execute(x, b, rng=None)
            payload = encode_release(result, req, request_id, b.mechanism.linear)
        except Exception:
            # whether a release fails once the counts are used may depend on the data: it is charged, and its
            # details are withheld (as in Session.release)
            message = (f"the release on {list(b.plan.columns)} failed after the data were read; its details (even "
                       f"the kind of error) are withheld because they may depend on the data, and its ε = "
                       f"{b.epsilon:.4g} was charged. Nothing was released")
            stored, charged = self.ledger.charge_failed(analyst, request_id, b.epsilon,
                                                        {**entry, "mechanism": f"{b.mechanism.name} — failed"},
                                                        message)
            if not charged:
                return self._replay(self.ledger.outcome(analyst, request_id), key, request_id)
            raise BlowfishError(stored) from None
        entry.update(expected_error=None if result.expected_error is None else float(result.expected_error),
                     accuracy=None if req.accuracy is None else list(req.accuracy))
        stored, charged = self.ledger.charge(analyst, request_id, b.epsilon, entry, payload)
        if not charged:  # the same id was charged meanwhile (a concurrent retry): its request must be this one
            return self._replay(self.ledger.outcome(analyst, request_id), key, request_id)
        self._recent.append({"time": _iso(time.time()), "analyst": analyst, "query": entry["query"],
                             "columns": entry["columns"], "epsilon": entry["epsilon"], "mechanism": entry["mechanism"]})
        del self._recent[:-100]
        for callback in list(self._listeners):
            try:
                callback(entry)
            except Exception:  # a monitor's failure never fails a release
                pass
        return stored

    # -- helpers ---------------------------------------------------------------------------
    def _replay(self, previous: dict, key: str, request_id: str) -> str:
        if previous["entry"].get("request") != key:
            raise RequestConflict(
                f"request_id {request_id!r} was used before for another request; a retry must repeat its request "
                "exactly, and a new request needs a new id")
        if previous["kind"] == "failed":
            raise BlowfishError(previous["response"])
        return previous["response"]

    def _budgeted(self, analyst: str, req: Request) -> Budgeted:
        # cached per analyst: a shared cache would let one analyst time another's quotes
        key = req.key()
        with self._quotes_lock:
            mine = self._quotes.setdefault(analyst, OrderedDict())  # own bound too: no eviction by others
            hit = mine.get(key)
            if hit is not None:
                mine.move_to_end(key)
                return hit
        with memo_scope(analyst):  # what the planning layer remembers is per analyst too
            b = self.catalog.quote(req)
            _dry_run(b)
        with self._quotes_lock:
            mine = self._quotes.setdefault(analyst, OrderedDict())
            mine[key] = b
            while len(mine) > QUOTE_CACHE:
                mine.popitem(last=False)
        return b

    def _histogram(self, cols: tuple[str, ...], analyst: str | None = None) -> np.ndarray:
        """The counts over ``cols``, remembered per analyst: a release's time must not tell one analyst which
        columns another released (one-column counts are made at start-up for everyone, ``analyst=None``)."""
        key = (None, cols) if len(cols) == 1 else (analyst, cols)
        with self._counts_lock:  # held only to look up: counting one key never delays another key's release
            done = self._counts.get(key)
            if done is not None:
                return done
            lock = self._counting.setdefault(key, threading.Lock())
        with lock:  # one count per key, however many requests ask for it at once
            with self._counts_lock:
                done = self._counts.get(key)
            if done is None:
                plan = self.catalog.plan("histogram", list(cols))
                done = np.asarray(histogram(self._data, plan.domain), dtype=float)
                done.setflags(write=False)
                with self._counts_lock:
                    self._counts[key] = done
                    self._counting.pop(key, None)
            return done

    def _check_fit(self) -> None:
        """Count every column now: data outside the curator's bins stop the service before any analyst queries."""
        for c in self.catalog.columns:
            try:
                self._histogram((c,))
            except BlowfishError:
                raise DomainError(
                    f"the data do not fit the bins of column {c!r} (a value is missing, not numeric or outside the "
                    "bins): fix the bins or the data before serving them") from None


def _public_catalog(data, bins, policy, bounds) -> Catalog:
    """The catalog, refusing bins or categories taken from the data: the service shows its bins to every analyst."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataDerivedBinsWarning)
        try:
            return Catalog.from_data(data, bins, policy, bounds)
        except DataDerivedBinsWarning as w:
            raise DomainError(
                f"the service shows its bins to every analyst, so they must be public: {str(w).split(',')[0]} from the "
                "data. Give public bounds=(lo, hi) or bin edges, and categories as a list") from None


def _dry_run(b: Budgeted) -> None:
    """Run the plan once on all-zero counts (public): a mechanism that cannot answer the query fails here, as a
    refusal that charges nothing, instead of after the data are read."""
    try:
        execute(np.zeros(b.plan.domain.size), b, rng=None)
    except Exception as exc:
        raise InvalidParameterError(
            f"mechanism {b.mechanism.name} cannot answer this {b.plan.query.name} query under "
            f"{b.plan.policy.summary()} ({exc}); choose another mechanism or mechanism='auto'. Nothing was "
            "charged") from None


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds")


