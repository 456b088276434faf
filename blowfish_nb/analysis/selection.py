"""Choosing a mechanism by its analytic expected error."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .._validation import check_epsilon
from ..mechanisms import Laplace, MatrixMechanism, Ordered
from ..policy import Policy
from ..workload import Workload

__all__ = ["choose_mechanism", "DEFAULT_CANDIDATES"]

DEFAULT_CANDIDATES: tuple[MatrixMechanism, ...] = (Laplace(), Ordered())


def choose_mechanism(
    workload: Workload,
    policy: Policy,
    epsilon: float,
    candidates: Sequence[MatrixMechanism] = DEFAULT_CANDIDATES,
) -> tuple[MatrixMechanism, pd.DataFrame]:
    """The candidate with the lowest analytic per-query error, and the table it was chosen from.

    Examples
    --------
    >>> from blowfish_nb import Domain, policy, workload
    >>> d = Domain.from_column(pd.Series([1.0], name="v"), bins=64, bounds=(0, 64))
    >>> best, table = choose_mechanism(workload.prefix(64), policy.line(d), 1.0)
    >>> best.name, float(table.loc["Laplace", "expected_error"] / table.loc["Ordered", "expected_error"])
    ('Ordered', 130.0)
    """
    epsilon = check_epsilon(epsilon)
    rows = []
    for mech in candidates:
        rows.append(
            {
                "mechanism": mech.name,
                "sensitivity": mech.sensitivity(policy),
                "expected_error": mech.expected_error(workload, policy, epsilon),
            }
        )
    table = pd.DataFrame(rows).set_index("mechanism")
    best = min(range(len(candidates)), key=lambda i: rows[i]["expected_error"])
    return candidates[best], table
