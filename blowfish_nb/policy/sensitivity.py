"""Policy-specific sensitivity by edge differences (Haney et al. 2015, Lemma 4.5).

Moving one record along edge (u, v) changes the histogram by e_u − e_v (by e_u
for an edge to ⊥), so Δ_A(G) = max over edges of ‖A e_u − A e_v‖₁. This is the
sensitivity of A·P_G, computed without forming P_G.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import scipy.sparse as sp

from ..exceptions import InvalidParameterError

__all__ = ["edge_sensitivity", "clique_sensitivity"]


def edge_sensitivity(strategy, edge_chunks: Iterable[tuple[np.ndarray, np.ndarray]], k: int) -> float:
    """Max over the given edges of the L1 norm of the strategy's column difference.

    Parameters
    ----------
    strategy : Workload, numpy.ndarray or scipy.sparse matrix
        A q×k linear map. Structured workloads use their ``column_differences``.
    edge_chunks : iterable of (u, v) int arrays
        Edges; ``v < 0`` marks an edge to ⊥.
    k : int
        Number of cells (columns the strategy must have).

    Raises
    ------
    InvalidParameterError
        When the strategy has the wrong number of columns, or a column an edge touches holds NaN or ±inf.

    Examples
    --------
    >>> A = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    >>> edge_sensitivity(A, [(np.array([0, 1]), np.array([1, 2]))], 3)
    1.0
    """
    if strategy.shape[1] != k:
        raise InvalidParameterError(
            f"strategy must have one column per cell ({k}), got shape {strategy.shape}"
        )
    structured = hasattr(strategy, "column_differences")
    if not structured:
        strategy = sp.csc_array(strategy, dtype=float)
    best = 0.0
    for u, v in edge_chunks:
        u = np.asarray(u, dtype=np.intp)
        v = np.asarray(v, dtype=np.intp)
        if u.size == 0:
            continue
        to_bottom = v < 0
        if structured:
            values = np.empty(u.size)
            values[to_bottom] = strategy.column_norms(u[to_bottom])
            values[~to_bottom] = strategy.column_differences(u[~to_bottom], v[~to_bottom])
        else:
            values = _sparse_column_l1(strategy, u, v, to_bottom)
        top = float(values.max())
        if not np.isfinite(top):  # max(0.0, nan) is 0.0: a NaN entry would otherwise be charged Δ = 0 (attack33b)
            raise InvalidParameterError(
                f"strategy must have finite entries: an edge's column difference is {top!r}"
            )
        best = max(best, top)
    return best


def _sparse_column_l1(A: sp.csc_array, u, v, to_bottom) -> np.ndarray:
    out = np.empty(u.size)
    if to_bottom.any():
        out[to_bottom] = abs(A[:, u[to_bottom]]).sum(axis=0)
    pair = ~to_bottom
    if pair.any():
        out[pair] = abs(A[:, u[pair]] - A[:, v[pair]]).sum(axis=0)
    return out


def clique_sensitivity(strategy, lows: np.ndarray, highs: np.ndarray, edge_chunks, k: int) -> float:
    """Δ_A over a union of cliques, each given by its smallest and largest cell.

    For strategies whose column distance over any set of cells is largest at
    the set's two extreme cells (``diameter_at_extremes``: identity, prefix
    sums, hierarchical trees — their rows are intervals of cells), the answer
    is a closed form over the cliques; otherwise the cliques' edges are
    enumerated.
    """
    if getattr(strategy, "diameter_at_extremes", False):
        if strategy.shape[1] != k:
            raise InvalidParameterError(
                f"strategy must have one column per cell ({k}), got shape {strategy.shape}"
            )
        lows, highs = np.asarray(lows), np.asarray(highs)
        keep = lows != highs
        if not keep.any():
            return 0.0
        return float(np.max(strategy.column_differences(lows[keep], highs[keep])))
    return edge_sensitivity(strategy, edge_chunks, k)
