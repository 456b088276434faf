"""Budgeted sessions: a total ε over one data set, a ledger, and composition across releases.

Semantics (what a session promises)
-----------------------------------
* The curator fixes once the columns that may be queried, their bins (the
  domain) and one policy per column. The session's policy G is the attribute
  composition of the per-column policies (BlowfishDB Def. 3.2): two records
  are neighbours when they differ in one column, along an edge of that
  column's graph (or by ⊥ edges for added/removed records).
* A release names some of these columns; it runs under the composition of
  their policies — the projection of G onto them — and charges its ε.
* After releases with ε₁, …, ε_n the data are (Σ εᵢ, G)-Blowfish private
  (sequential composition, He et al. 2014 Thm 4.1; for per-attribute
  projected policies BlowfishDB Thm 1). The budget caps Σ εᵢ.
* A release whose ε exceeds what is left raises :class:`BudgetExceededError`
  before anything is computed; a release that fails for any reason charges
  nothing (the charge is recorded only after the answers exist).
* ``save``/``load`` keep the ledger across kernel restarts; ``load`` refuses
  a frame whose fingerprint (row count, columns and a hash of their values)
  differs from the one the session was opened on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from . import policy as policies
from ._validation import check_epsilon
from .domain import Domain
from .exceptions import BudgetExceededError, InvalidParameterError, PolicyError, SessionError
from .policy import Policy
from .queries import build_query
from .release import Release

__all__ = ["Session"]

#: spending within this of the budget counts as exact (sums of floats)
TOLERANCE = 1e-12


class Session:
    """A privacy budget over one DataFrame, spent release by release (see the module notes).

    Parameters
    ----------
    data : pandas.DataFrame (or dask.dataframe.DataFrame)
        The rows; read once per release to count the histogram.
    budget : float
        Total ε the session may spend.
    bins : dict
        Column → binning (count, edges, ``"categorical"``, category list):
        the queryable columns and their domain.
    policy : str, tuple or dict
        One policy for every column (``"dp"``, ``"line"``, ``("threshold", θ)``,
        ``"bounded"``, ...) or a dict column → such a spec or a one-column Policy.
    bounds : dict, optional
        Column → public (lo, hi) for columns binned by a count.

    Examples
    --------
    >>> from blowfish_nb import datasets
    >>> df = datasets.salaries(n=500, seed=2)
    >>> s = df.blowfish.session(1.0, bins={"age": 62}, policy="line")
    >>> r = s.release("histogram", "age", epsilon=0.25, rng=0)
    >>> s.spent, s.remaining, len(s.ledger)
    (0.25, 0.75, 1)
    """

    def __init__(self, data, budget: float, *, bins: Mapping, policy="dp", bounds: Mapping | None = None):
        from .accessor import domain_for

        self.budget = check_epsilon(budget, "budget")
        if not isinstance(bins, Mapping) or not bins:
            raise InvalidParameterError(f"bins must be a dict column -> binning naming the queryable columns, got {bins!r}")
        from .accessor import _schema

        bounds = dict(bounds or {})
        self._data = data
        frame, lazy = _schema(data)
        self._attributes = {}
        for c, spec in bins.items():
            if not isinstance(c, str) or c not in frame.columns:
                raise InvalidParameterError(f"bins names column {c!r}, which is not in the data {list(frame.columns)}")
            self._attributes[c] = domain_for(frame, [c], spec, bounds=bounds.get(c), lazy=lazy).attributes[0]
        self._policies = {c: self._column_policy(c, policy) for c in self._attributes}
        self._entries: list[dict] = []
        self._fingerprint = _fingerprint(data, list(self._attributes))

    # -- budget --------------------------------------------------------------------------
    @property
    def spent(self) -> float:
        """ε spent so far."""
        return float(math.fsum(e["epsilon"] for e in self._entries))

    @property
    def remaining(self) -> float:
        """ε still available."""
        return max(0.0, self.budget - self.spent)

    @property
    def columns(self) -> list[str]:
        """The columns releases may use."""
        return list(self._attributes)

    def attribute(self, column: str):
        """The binned attribute (domain) of ``column``."""
        return self._attributes[self._check_columns(column)[0]]

    def column_policy(self, column: str) -> Policy:
        """The curator's policy for ``column`` alone."""
        return self._policies[self._check_columns(column)[0]]

    @property
    def policy(self) -> Policy:
        """G: the composition of every column's policy."""
        return self._policy_for(self.columns)

    @property
    def ledger(self) -> pd.DataFrame:
        """One row per release: time, query, columns, ε, policy summary, mechanism, expected error."""
        cols = ["time", "query", "columns", "epsilon", "policy", "mechanism", "expected_error", "accuracy"]
        return pd.DataFrame(self._entries, columns=cols)

    # -- releasing -------------------------------------------------------------------------
    def quote(self, query="histogram", columns=None, *, ranges=None, keep=None, epsilon=None, accuracy=None,
              mechanism="auto", projection: bool = True):
        """What :meth:`release` would spend, without reading the data or charging anything.

        Returns the budgeted plan: ``.epsilon`` (from ``epsilon`` or derived
        from ``accuracy``) and ``.mechanism``. The analyst panel shows it
        before Run.

        Examples
        --------
        >>> from blowfish_nb import datasets
        >>> s = datasets.salaries(n=500, seed=2).blowfish.session(1.0, bins={"age": 62})
        >>> q = s.quote("histogram", "age", accuracy=(20, 0.05))
        >>> q.mechanism.name, round(q.epsilon, 4), s.spent
        ('Laplace', 0.3549, 0.0)
        """
        from .accessor import Plan, plan_budget

        cols = self._check_columns(columns)
        domain = Domain([self._attributes[c] for c in cols])
        plan = Plan(domain, build_query(domain, query, ranges=ranges, keep=keep), self._policy_for(cols), cols)
        return plan_budget(plan, epsilon=epsilon, accuracy=accuracy, mechanism=mechanism, projection=projection)

    def release(self, query="histogram", columns=None, *, ranges=None, keep=None, epsilon=None, accuracy=None,
                mechanism="auto", projection: bool = True, rng=None) -> Release:
        """A release charged to this session (same query arguments as ``df.blowfish.release``).

        Raises
        ------
        BudgetExceededError
            When ε (given, or derived from ``accuracy``) exceeds :attr:`remaining`;
            nothing is computed and nothing is charged.
        """
        from .accessor import execute, histogram

        budgeted = self.quote(query, columns, ranges=ranges, keep=keep, epsilon=epsilon, accuracy=accuracy,
                              mechanism=mechanism, projection=projection)
        cols, domain = budgeted.plan.columns, budgeted.plan.domain
        if budgeted.epsilon > self.remaining + TOLERANCE:
            raise BudgetExceededError(
                f"this release needs ε = {budgeted.epsilon:.4g} but the session has {self.remaining:.4g} of "
                f"{self.budget:g} left; nothing was computed or charged"
            )
        result = execute(histogram(self._data, domain), budgeted, rng=rng)
        self._entries.append({
            "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "query": result.query,
            "columns": ", ".join(cols),
            "epsilon": result.epsilon,
            "policy": result.policy.summary(),
            "mechanism": result.mechanism,
            "expected_error": result.expected_error,
            "accuracy": None if result.accuracy is None else list(result.accuracy),
        })
        return result

    # -- persistence -----------------------------------------------------------------------
    def save(self, path) -> None:
        """Write the budget, domain, policies and ledger as JSON."""
        state = {
            "format": "blowfish_nb.session/1",
            "budget": self.budget,
            "domain": Domain(list(self._attributes.values())).to_dict(),
            "policies": {c: p.to_dict() for c, p in self._policies.items()},
            "fingerprint": self._fingerprint,
            "ledger": self._entries,
        }
        Path(path).write_text(json.dumps(state, indent=1, default=str))

    @classmethod
    def load(cls, path, data) -> "Session":
        """Reopen a saved session on the same data; refuses other data.

        Raises
        ------
        SessionError
            Unreadable file, or a frame that is not the one the session was opened on.
        """
        try:
            state = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise SessionError(f"cannot read a session from {str(path)!r}: {exc}") from None
        if not isinstance(state, dict) or state.get("format") != "blowfish_nb.session/1":
            raise SessionError(f"{str(path)!r} is not a saved blowfish_nb session")
        domain = Domain.from_dict(state["domain"])
        columns = list(domain.names)
        found = _fingerprint(data, columns) if all(c in _schema_frame(data).columns for c in columns) else None
        if found != state["fingerprint"]:
            raise SessionError(
                f"the data do not match the session saved in {str(path)!r} (columns {columns}, "
                f"saved fingerprint {state['fingerprint']}, got {found}); open it on the same frame"
            )
        s = cls.__new__(cls)
        s.budget = float(state["budget"])
        s._data = data
        s._attributes = {a.name: a for a in domain.attributes}
        s._policies = {c: Policy.from_dict(d) for c, d in state["policies"].items()}
        s._entries = list(state["ledger"])
        s._fingerprint = state["fingerprint"]
        return s

    def __repr__(self) -> str:
        return (f"<Session ε spent {self.spent:.4g} of {self.budget:g} · {len(self._entries)} releases · "
                f"{self.policy.summary()}>")

    # -- helpers ---------------------------------------------------------------------------
    def _check_columns(self, columns) -> list[str]:
        if columns is None:
            raise InvalidParameterError(f"columns= is required; this session's columns are {self.columns}")
        cols = [columns] if isinstance(columns, str) else list(columns)
        unknown = [c for c in cols if c not in self._attributes]
        if unknown or not cols or len(set(cols)) != len(cols):
            raise InvalidParameterError(
                f"columns must be distinct columns of this session {self.columns}, got {columns!r}")
        return cols

    def _column_policy(self, column: str, spec) -> Policy:
        from .accessor import resolve_policy

        if isinstance(spec, Mapping):
            if column not in spec:
                raise PolicyError(f"policy has no entry for column {column!r}; give one per column of bins")
            spec = spec[column]
        sub = Domain([self._attributes[column]])
        if isinstance(spec, Policy):
            return resolve_policy(spec, sub)
        if isinstance(spec, tuple) and len(spec) == 2:
            params = spec[1] if isinstance(spec[1], Mapping) else {"theta": spec[1]}
            return resolve_policy(spec[0], sub, **params)
        return resolve_policy(spec, sub)

    def _policy_for(self, cols: Sequence[str]) -> Policy:
        if len(cols) == 1:
            return self._policies[cols[0]]
        domain = Domain([self._attributes[c] for c in cols])
        return policies.compose(domain, {c: self._policies[c] for c in cols})


def _schema_frame(data) -> pd.DataFrame:
    """A pandas frame with the data's columns and dtypes (Dask frames: their empty meta)."""
    if isinstance(data, pd.DataFrame):
        return data
    meta = getattr(data, "_meta", None)
    if isinstance(meta, pd.DataFrame):
        return meta
    raise SessionError(f"data must be a pandas or Dask DataFrame, got {type(data).__name__}")


def _fingerprint(data, columns: list[str]) -> str:
    """Row count and a hash of the session's columns; the same for a pandas frame and a Dask frame of it."""
    if isinstance(data, pd.DataFrame):
        parts = [_hash_parts(data[columns])]
    else:
        per = data[columns].map_partitions(lambda p: pd.DataFrame([_hash_parts(p)], columns=["hi", "lo", "n"]),
                                           meta={"hi": "int64", "lo": "int64", "n": "int64"})
        parts = [tuple(int(v) for v in row) for row in per.compute().itertuples(index=False)]
    hi, lo, n = (sum(p[i] for p in parts) for i in range(3))
    h = ((hi << 32) + lo) % (1 << 64)
    return f"{n}:{','.join(columns)}:{h:016x}"


def _hash_parts(frame: pd.DataFrame) -> tuple[int, int, int]:
    """Sums of the high and low 32-bit halves of the row hashes (no overflow below 2^31 rows), and the row count."""
    h = pd.util.hash_pandas_object(frame, index=False).to_numpy(dtype=np.uint64)
    return int((h >> np.uint64(32)).sum()), int((h & np.uint64(0xFFFFFFFF)).sum()), len(frame)
