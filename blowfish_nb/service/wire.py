"""What crosses the wire between the analyst service and its clients: requests and releases as JSON.

A release travels as its noisy answers and public facts only (ε, mechanism,
expected error, provenance); the client rebuilds the :class:`Release` —
labels, policy, confidence intervals — from the service's public catalog and
the same planning code the server ran (:mod:`blowfish_nb.planning`), so the
two never disagree on what an answer means.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..accuracy import error_draws
from ..exceptions import InvalidParameterError
from ..planning import Catalog, Request
from ..release import Release

__all__ = ["as_request", "encode_release", "decode_release", "frame_json"]


def as_request(request: Request | Mapping) -> Request:
    """The validated request of a wire body (a JSON object) or an in-process :class:`Request`; names only.

    Examples
    --------
    >>> as_request({"columns": "age", "epsilon": 0.5}).mechanism
    'auto'
    """
    r = request.validated() if isinstance(request, Request) else Request.from_dict(request)
    if not isinstance(r.mechanism, str) or not isinstance(r.query, str):
        what = "mechanism" if not isinstance(r.mechanism, str) else "query"
        raise InvalidParameterError(
            f"{what} must be a name, got a {type(getattr(r, what)).__name__}: the service takes names only, never "
            "objects")
    return r


def plain(value):
    """Tuples as lists and numpy scalars as Python numbers, for JSON."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def frame_json(table) -> dict | None:
    """A pandas table as ``{"columns", "index", "data"}`` (None stays None), JSON-safe."""
    if table is None:
        return None
    return json.loads(table.to_json(orient="split", default_handler=str))


def encode_release(result: Release, request: Request, request_id: str, linear: bool) -> str:
    """The JSON the analyst receives for a release: answers and public facts, never true counts or seeds."""
    expected = result.expected_error
    prov = result.provenance
    answers = np.asarray(result.answers.to_numpy(), dtype=float)
    if not np.all(np.isfinite(answers)):  # a mechanism never returns these; refuse rather than send NaN
        raise InvalidParameterError("the release produced non-finite answers; nothing is sent")
    return json.dumps({
        "request_id": request_id,
        "request": request.to_dict(),
        "query": str(result.query),
        "columns": list(result.columns),
        "epsilon": float(result.epsilon),
        "mechanism": str(result.mechanism),
        "linear": bool(linear),
        "expected_error": None if expected is None else float(expected),
        "accuracy": None if result.accuracy is None else [float(v) for v in result.accuracy],
        "answers": answers.tolist(),
        "provenance": {
            "noise": str(prov.get("noise")),
            "mechanism": str(prov.get("mechanism")),
            "projected cells": prov.get("projected cells"),
            "sensitivity": None if prov.get("sensitivity") is None else float(prov["sensitivity"]),
            "candidates": frame_json(prov.get("candidates")),
        },
    }, allow_nan=False)


def decode_release(payload: Mapping, catalog: Catalog) -> Release:
    """The :class:`Release` a service response describes, rebuilt on the client from the public catalog.

    The labels and the policy come from the plan of the request (the same
    code the server ran); the confidence intervals from the mechanism the
    same public inputs choose, at the ε the server charged, drawn only when
    asked for (no data involved).
    """
    request = Request.from_dict(payload["request"])
    plan = catalog.plan(request.query, request.columns, **request.template_parameters())
    answers = np.asarray(payload["answers"], dtype=float)
    if answers.shape != (len(plan.query.labels),):
        raise InvalidParameterError(
            f"the service sent {answers.size} answers for a query with {len(plan.query.labels)}; the client and "
            "the service disagree on the catalog (reconnect)")
    epsilon = float(payload["epsilon"])
    sampler = _error_sampler(catalog, request, payload["mechanism"], epsilon) if payload.get("linear") else None
    prov = dict(payload["provenance"])
    table = prov.get("candidates")
    if table is not None:
        prov["candidates"] = pd.DataFrame(table["data"], index=table["index"], columns=table["columns"])
        prov["candidates"].index.name = "mechanism"
    prov["request id"] = payload["request_id"]
    return Release(
        answers=pd.Series(answers, index=plan.query.labels, name=f"noisy {plan.query.name}"),
        query=plan.query.name,
        epsilon=epsilon,
        policy=plan.policy,
        mechanism=str(payload["mechanism"]),
        expected_error=payload["expected_error"],
        columns=tuple(plan.columns),
        accuracy=None if payload["accuracy"] is None else tuple(payload["accuracy"]),
        provenance=prov,
        error_sampler=sampler,
    )


def _error_sampler(catalog: Catalog, request: Request, mechanism: str, epsilon: float):
    """Draws of a linear release's error, built on first use from the public plan (None for adaptive mechanisms)."""
    state: dict = {}

    def build():
        if "m" not in state:
            b = catalog.quote(request)
            same = b.mechanism.name == mechanism and math.isclose(b.epsilon, epsilon, rel_tol=1e-9)
            state["m"] = (b.mechanism, b.run) if same and b.mechanism.linear else None
        return state["m"]

    def sampler(n, seed=0):
        made = build()
        if made is None:
            raise InvalidParameterError(f"{mechanism} adapts to the data: its error has no public distribution")
        m, run = made
        return error_draws(m, run.workload, run.policy, epsilon, n, seed)

    return sampler
