"""Expected error and choosing a mechanism by it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .._validation import check_epsilon
from ..exceptions import BlowfishError, InvalidParameterError
from ..mechanisms import (
    Hierarchical, HThetaRanges, Laplace, MatrixMechanism, Ordered, OrderedHierarchical, Privelet, Transformed,
)
from ..policy import Policy, Threshold
from ..workload import Workload
from .lower_bound import LOWER_BOUND_LIMIT, lower_bound

__all__ = ["choose_mechanism", "expected_error", "default_candidates"]


#: H^θ+Privelet is offered by "auto" up to this θ: it is built for small θ (Haney et al. §5), and its exact
#: sensitivity scans a window of edges that grows with θ (seconds at θ = 256, minutes at θ = k on 4,096 cells)
HTHETA_MAX_THETA = 64


def default_candidates(policy: Policy) -> tuple[MatrixMechanism, ...]:
    """The data-independent mechanisms considered by ``mechanism="auto"``."""
    one_d = len(policy.domain.shape) == 1
    extra = (OrderedHierarchical(),) if one_d else ()
    if one_d and isinstance(policy, Threshold) and policy.metric == "l1" and policy.theta <= HTHETA_MAX_THETA:
        extra += (HThetaRanges(),)
    return (Laplace(), Ordered(), Hierarchical(2), Hierarchical(4), Privelet(), Transformed(), *extra)


def expected_error(mechanism, workload: Workload, policy: Policy, epsilon: float) -> float:
    """Analytic expected squared error per query of a data-independent mechanism.

    Examples
    --------
    >>> from blowfish_nb import Domain, mechanisms, policy, workload
    >>> round(expected_error(mechanisms.Ordered(), workload.prefix(64), policy.line(Domain.grid(64)), 1.0), 4)
    1.8413
    """
    if not hasattr(mechanism, "expected_error"):
        raise InvalidParameterError(
            f"{getattr(mechanism, 'name', mechanism)!r} is data-dependent: its error depends on the data "
            "(estimate it empirically with repeated releases)"
        )
    return mechanism.expected_error(workload, policy, epsilon)


def choose_mechanism(
    workload: Workload,
    policy: Policy,
    epsilon: float,
    candidates: Sequence[MatrixMechanism] | None = None,
) -> tuple[MatrixMechanism, pd.DataFrame]:
    """The candidate with the lowest analytic per-query error, and the table it was chosen from.

    The table lists each candidate's sensitivity under the policy, its expected
    error and (for domains of at most 2048 cells) its ratio to the SVD lower
    bound; candidates that cannot answer the workload say why.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> best, table = choose_mechanism(workload.prefix(64), policy.line(Domain.grid(64)), 1.0)
    >>> best.name, round(float(table.loc["Laplace", "expected_error"] / table.loc["Ordered", "expected_error"]), 1)
    ('Transformed+Laplace', 138.3)
    """
    epsilon = check_epsilon(epsilon)
    candidates = tuple(candidates) if candidates is not None else default_candidates(policy)
    try:
        bound = lower_bound(workload, policy, epsilon) if policy.domain.size <= LOWER_BOUND_LIMIT // 4 else np.nan
    except BlowfishError:
        bound = np.nan
    rows = []
    for mech in candidates:
        label = repr(mech) if sum(type(m) is type(mech) for m in candidates) > 1 else mech.name
        try:
            err = mech.expected_error(workload, policy, epsilon)
            rows.append({"mechanism": label, "sensitivity": mech.sensitivity(policy), "expected_error": err,
                         "ratio_to_lower_bound": err / bound if bound and bound > 0 else np.nan, "note": ""})
        except BlowfishError as exc:
            rows.append({"mechanism": label, "sensitivity": np.nan, "expected_error": np.inf,
                         "ratio_to_lower_bound": np.nan, "note": str(exc)})
    table = pd.DataFrame(rows).set_index("mechanism")
    best = int(np.argmin(table["expected_error"].to_numpy()))
    if not np.isfinite(table["expected_error"].iloc[best]):
        raise InvalidParameterError(f"no candidate mechanism can answer this workload: {rows[0]['note']}")
    return candidates[best], table
