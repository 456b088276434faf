"""One request: what an analyst asks of a release, as a single validated value every front end and the wire share.

A :class:`Request` names the query template, the columns, the template's
parameters (``ranges``, ``keep``, ``k``, ``iterations``: see
:data:`blowfish_nb.queries.TEMPLATES`), the budget (``epsilon`` or an
``accuracy`` target (α, β)), the mechanism and whether to project. The
in-process :class:`~blowfish_nb.Session`, the :class:`~blowfish_nb.planning.Catalog`,
the :class:`~blowfish_nb.service.RemoteSession` and the analyst service take
it (their keyword faces build one); :meth:`Request.validated` is where its
checks happen, once, before anything is planned; :meth:`Request.to_json` is
what travels over HTTP and :meth:`Request.key` what caches and retries
compare.

Checks that need the bins (a range inside the domain, ``keep`` naming a
queried column, the cell limit) happen when the query is built over the
domain (:func:`blowfish_nb.queries.build_query`); everything else is here.

**Adding a query parameter** touches: its field and its check below, its
template's entry in :data:`~blowfish_nb.queries.TEMPLATES` and the builder
that uses it (:mod:`blowfish_nb.queries`), and the HTTP body schema
(:mod:`blowfish_nb.service.app`). Sessions, the catalog, the client and the
wire format pass requests through unchanged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from numbers import Integral, Real
from typing import Any

import numpy as np

from ._validation import check_epsilon, short_repr
from .accuracy import check_accuracy
from .exceptions import InvalidParameterError
from .mechanisms import REGISTRY, Mechanism
from .mechanisms.sulq import ITERATIONS, SuLQ
from .operators import Workload
from .queries import PARAMETERS, QUERIES, TEMPLATES

__all__ = ["Request", "FIELDS", "MAX_K", "MAX_ITERATIONS"]

#: most clusters a k-means request may ask for
MAX_K = 256
#: most SuLQ steps a k-means request may ask for
MAX_ITERATIONS = 100
#: the mechanism name of k-means (not in the registry: "auto" never picks it for a counting query)
SULQ = "sulq"


@dataclass(frozen=True)
class Request:
    """A release request (see the module notes); :meth:`validated` checks and normalises it.

    Parameters
    ----------
    query : str or Workload
        A template of :data:`blowfish_nb.queries.QUERIES` (a Workload in-process only: it has no JSON form).
    columns : str or sequence of str
        The columns the query is over (normalised to a tuple).
    ranges : sequence, optional
        ``query="range"``: ``(lo, hi)`` per range, or one pair per column on several columns (tuples).
    keep : str or sequence of str, optional
        ``query="marginal"``: the columns kept (a tuple).
    epsilon : float, optional
        The budget spent (Fraction, Decimal and numpy numbers become floats). Exactly one of ε and ``accuracy``.
    accuracy : (alpha, beta), optional
        Spend the least ε with every answer within α with probability ≥ 1 − β (linear mechanisms only).
    mechanism : str or Mechanism
        ``"auto"`` or a name of :data:`blowfish_nb.mechanisms.REGISTRY` (``"sulq"`` for k-means); a
        Mechanism object in-process only, in a session that allows it.
    projection : bool
        Answer on the coarsest partition supporting the query.
    k : int, optional
        ``query="kmeans"``: the number of clusters (at most :data:`MAX_K`).
    iterations : int, optional
        ``query="kmeans"``: SuLQ steps, ε/iterations each (default 10, at most :data:`MAX_ITERATIONS`).

    Examples
    --------
    >>> r = Request("range", "age", ranges=[(18, 30), (30, 65)], epsilon=0.5).validated()
    >>> r.columns, r.ranges
    (('age',), ((18, 30), (30, 65)))
    >>> Request.from_json(r.to_json()) == r
    True
    >>> len(r.key())
    64
    >>> Request("histogram", "age", epsilon=0.5, keep="age").validated()
    Traceback (most recent call last):
    ...
    blowfish_nb.exceptions.InvalidParameterError: keep= is for query='marginal', got query='histogram'
    """

    query: str | Workload = "histogram"
    columns: str | Sequence[str] | None = None
    ranges: Sequence | None = None
    keep: str | Sequence[str] | None = None
    epsilon: float | None = None
    accuracy: tuple[float, float] | None = None
    mechanism: str | Mechanism = "auto"
    projection: bool = True
    k: int | None = None
    iterations: int | None = None

    # -- building ---------------------------------------------------------------------------
    @classmethod
    def of(cls, query: "str | Workload | Request" = "histogram", columns=None, **fields) -> "Request":
        """The validated request of a keyword face: ``query`` and ``columns`` positional, the rest by name.

        A Request given as ``query`` is taken as it is (then nothing else may be given). An unknown
        keyword is refused, naming it.

        Examples
        --------
        >>> Request.of("histogram", ["age"], epsilon=1).epsilon
        1.0
        >>> Request.of("histogram", "age", epsilom=1)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        blowfish_nb.exceptions.InvalidParameterError: unknown request parameter 'epsilom'; parameters are [...]
        """
        if isinstance(query, Request):
            if columns is not None or fields:
                given = sorted(fields) + (["columns"] if columns is not None else [])
                raise InvalidParameterError(
                    f"a Request was given, together with {given}: put every parameter in the Request "
                    "(dataclasses.replace(request, ...))")
            return query.validated()
        _refuse_unknown(fields)
        return cls(query, columns, **fields).validated()

    @classmethod
    def from_dict(cls, data: Mapping) -> "Request":
        """The validated request a JSON object describes (missing fields: defaults; unknown ones: refused)."""
        if not isinstance(data, Mapping):
            raise InvalidParameterError(f"a request must be a JSON object, got {type(data).__name__}")
        _refuse_unknown(data)
        return cls(**data).validated()

    @classmethod
    def from_json(cls, text: str | bytes) -> "Request":
        """The validated request of :meth:`to_json`'s text: ``Request.from_json(r.to_json()) == r.validated()``."""
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise InvalidParameterError(f"a request must be JSON text: {exc}") from None
        return cls.from_dict(data)

    # -- checking ---------------------------------------------------------------------------
    def validated(self) -> "Request":
        """This request checked and normalised (tuples, floats, defaults); errors name the parameter.

        Raises
        ------
        InvalidParameterError
            Any field out of its range, a parameter given to a template that does not take it, neither
            or both of ε and ``accuracy``, an unknown mechanism name.
        """
        if self.__dict__.get("_valid"):
            return self
        query = self.query
        if isinstance(query, Workload):
            name = "workload"
        elif isinstance(query, str) and query in TEMPLATES:
            name = query
        else:
            raise InvalidParameterError(f"query must be one of {QUERIES} or a Workload, got {query!r}")
        takes = TEMPLATES.get(name, ())
        for p in PARAMETERS:
            if getattr(self, p) is not None and p not in takes:
                owner = next(t for t, ps in TEMPLATES.items() if p in ps)
                raise InvalidParameterError(f"{p}= is for query={owner!r}, got query={name!r}")
        out = {
            "query": query,
            "columns": None if self.columns is None else _names(self.columns, "columns"),
            "ranges": None if self.ranges is None else _ranges(self.ranges),
            "keep": None if self.keep is None else _names(self.keep, "keep"),
            "mechanism": _mechanism(self.mechanism, name),
            "projection": _flag(self.projection, "projection"),
            "k": None if self.k is None else _count(self.k, "k", MAX_K),
            "iterations": None if self.iterations is None else _count(self.iterations, "iterations", MAX_ITERATIONS),
        }
        out["epsilon"], out["accuracy"] = _budget(self.epsilon, self.accuracy)
        if name == "range" and out["ranges"] is None:
            raise InvalidParameterError("query='range' needs ranges=[(lo, hi), ...] in data units, got ranges=None")
        if name == "marginal" and out["keep"] is None:
            raise InvalidParameterError("query='marginal' needs keep=<attribute or list of attributes>, got keep=None")
        if name == "kmeans":
            if out["k"] is None:
                raise InvalidParameterError("query='kmeans' needs k=<a positive number of clusters>")
            if out["iterations"] is None:
                out["iterations"] = ITERATIONS
            if out["accuracy"] is not None:
                raise InvalidParameterError(
                    "accuracy= is not available for query='kmeans' (SuLQ adapts to the data: no ε meets an (α, β) "
                    "target from public facts); give epsilon=")
        made = Request(**out)
        object.__setattr__(made, "_valid", True)
        return made

    # -- what travels -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The validated request in plain JSON types (lists for tuples); refused for a Workload or Mechanism object."""
        r = self.validated()
        if not isinstance(r.query, str):
            raise InvalidParameterError("query: a Workload has no JSON form; send a query template's name")
        if not isinstance(r.mechanism, str):
            raise InvalidParameterError(
                f"mechanism must be 'auto' or a vetted mechanism's name, got a {type(r.mechanism).__name__}: a "
                "mechanism object has no JSON form")
        return {f.name: _plain(getattr(r, f.name)) for f in dataclasses.fields(r)}

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, no spaces, ASCII): equal requests, equal text."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)

    def key(self) -> str:
        """SHA-256 (hex) of :meth:`to_json`: the stable key caches, quotes and retries compare."""
        return hashlib.sha256(self.to_json().encode("ascii")).hexdigest()

    def template_parameters(self) -> dict[str, Any]:
        """The parameters of this request's query template, by name (what builds the query over a domain)."""
        if not isinstance(self.query, str):
            return {}
        return {p: getattr(self, p) for p in TEMPLATES.get(self.query, ())}


#: the request's fields, in order
FIELDS = tuple(f.name for f in dataclasses.fields(Request))


def _refuse_unknown(fields) -> None:
    unknown = sorted(str(f) for f in fields if f not in FIELDS)
    if unknown:
        raise InvalidParameterError(f"unknown request parameter {unknown[0]!r}; parameters are {sorted(FIELDS)}")


def _names(value, name: str) -> tuple[str, ...]:
    names = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, (list, tuple)) else None
    if not names or not all(isinstance(c, str) and c for c in names):
        raise InvalidParameterError(f"{name} must be a column name or a non-empty list of names, got {value!r}")
    if len(set(names)) != len(names):
        raise InvalidParameterError(f"{name} must be distinct names, got {value!r}")
    return names


def _number(value, where: str):
    """A finite real (Decimal too) as a plain Python int or float (bools and text refused)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Real, Decimal)):
        raise InvalidParameterError(f"{where} must be finite numbers (not bools or text), got {_shown(value)}")
    try:
        out = float(value)
    except (OverflowError, ValueError):
        out = math.inf
    if not math.isfinite(out):
        raise InvalidParameterError(f"{where} must be finite numbers, got {_shown(value)}")
    return int(value) if isinstance(value, Integral) else out


def _shown(value) -> str:
    """``repr(value)``, cut to 60 characters (a 5,000-digit number is named by its exact length)."""
    return short_repr(value, 60)


def _ranges(ranges) -> tuple:
    if not isinstance(ranges, (list, tuple, np.ndarray)) or len(ranges) == 0:
        raise InvalidParameterError(f"ranges must be a non-empty list of (lo, hi) pairs in data units, got {ranges!r}")

    def pair(p, j):
        if not isinstance(p, (list, tuple, np.ndarray)) or len(p) != 2:
            raise InvalidParameterError(f"ranges[{j}] must be (lo, hi) pairs, got {p!r}")
        return tuple(_number(v, f"ranges[{j}] bounds") for v in p)

    out = []
    for j, r in enumerate(ranges):
        if isinstance(r, (list, tuple, np.ndarray)) and len(r) and isinstance(r[0], (list, tuple, np.ndarray)):
            out.append(tuple(pair(p, j) for p in r))  # one (lo, hi) per column
        else:
            out.append(pair(r, j))
    return tuple(out)


def _budget(epsilon, accuracy) -> tuple[float | None, tuple[float, float] | None]:
    if (epsilon is None) == (accuracy is None):
        raise InvalidParameterError(
            f"give exactly one of epsilon= and accuracy=(alpha, beta); got epsilon={_shown(epsilon)}, "
            f"accuracy={_shown(accuracy)}")
    if epsilon is not None:
        if isinstance(epsilon, (Real, Decimal)) and not isinstance(epsilon, (bool, np.bool_)):
            try:
                return check_epsilon(_number(epsilon, "epsilon")), None
            except InvalidParameterError:
                pass
        raise InvalidParameterError(f"epsilon must be a positive finite number, got {_shown(epsilon)}")
    if isinstance(accuracy, (list, tuple)) and len(accuracy) == 2:  # Fraction, Decimal, numpy numbers as floats
        accuracy = tuple(float(_number(v, "accuracy")) if isinstance(v, (Real, Decimal))
                         and not isinstance(v, (bool, np.bool_)) else v for v in accuracy)
    return None, check_accuracy(accuracy)


def _mechanism(mechanism, query: str):
    if isinstance(mechanism, Mechanism):
        if (query == "kmeans") != isinstance(mechanism, SuLQ):
            raise InvalidParameterError(
                f"mechanism {mechanism.name} cannot answer query={query!r}: query='kmeans' is answered by SuLQ, "
                "and SuLQ answers nothing else")
        return mechanism
    if not isinstance(mechanism, str):
        raise InvalidParameterError(f"mechanism must be 'auto', a mechanism's name or a Mechanism, got {mechanism!r}")
    if query == "kmeans":
        if mechanism.lower() not in ("auto", SULQ):
            raise InvalidParameterError(f"mechanism must be 'auto' or 'sulq' for query='kmeans', got {mechanism!r}")
    elif mechanism != "auto" and mechanism.lower() not in REGISTRY:
        raise InvalidParameterError(f"mechanism must be 'auto' or one of {sorted(REGISTRY)}, got {mechanism!r}")
    return mechanism


def _flag(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidParameterError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _count(value, name: str, most: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral) or not 1 <= value <= most:
        raise InvalidParameterError(f"{name} must be a whole number from 1 to {most}, got {value!r}")
    return int(value)


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value
