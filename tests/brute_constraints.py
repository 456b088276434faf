"""S(h, P) under count constraints by enumerating databases of n identified tuples (He et al. Def. 4.1).

Databases: every assignment of n ids to the k cells (no ⊥: the policies here
have none). Two databases are candidates when they give the same constraint
answers and differ in at least one discriminative pair (an edge of G) on some
id; neighbours are the minimal candidates: no third database D3 (a
candidate of D1 too) with T(D1, D3) ⊊ T(D1, D2), or T(D1, D3) = T(D1, D2)
and Δ(D3, D1) ⊊ Δ(D2, D1). Ids are exchangeable, so D1 runs over sorted
tuples only.
"""

from __future__ import annotations

import itertools

import numpy as np


def brute_histogram_sensitivity(policy, constraints, n: int, along_edges_only: bool = False) -> float:
    """max ‖h(D1) − h(D2)‖₁ over neighbours of n tuples; ``along_edges_only``: every changed tuple moves along G."""
    k = policy.domain.size
    e = policy.edges()
    if (e[:, 1] < 0).any():
        raise ValueError("the brute force covers policies without ⊥")
    edge = np.zeros((k, k), dtype=bool)
    edge[e[:, 0], e[:, 1]] = edge[e[:, 1], e[:, 0]] = True
    dbs = np.array(list(itertools.product(range(k), repeat=n)), dtype=np.int64)  # (N, n)
    M = constraints.masks.astype(np.int64)
    answers = M[:, dbs].sum(axis=2).T  # (N, p)
    _, group = np.unique(answers, axis=0, return_inverse=True)
    group = group.reshape(-1)
    hist = np.zeros((len(dbs), k), dtype=np.int64)
    np.add.at(hist, (np.repeat(np.arange(len(dbs)), n), dbs.reshape(-1)), 1)
    bit = (np.arange(n) * k)[None, :] + dbs  # (N, n): the bit of "id i holds value v"
    weights = np.left_shift(np.uint64(1), bit.astype(np.uint64))
    best = 0
    sorted_rows = np.flatnonzero((np.diff(dbs, axis=1) >= 0).all(axis=1))
    for r in sorted_rows:
        d1 = dbs[r]
        same = np.flatnonzero(group == group[r])
        others = dbs[same]
        changed = others != d1[None, :]
        disc = changed & edge[d1[None, :], others]
        T = np.bitwise_or.reduce(np.where(disc, weights[same], np.uint64(0)), axis=1)
        D = np.bitwise_or.reduce(np.where(changed, weights[same], np.uint64(0)), axis=1)
        cand = T != 0
        if along_edges_only:
            cand &= (changed == disc).all(axis=1)
        if not cand.any():
            continue
        T, D, rows = T[cand], D[cand], same[cand]
        # blocked[i, j]: candidate j rules out candidate i
        t_sub = (T[None, :] & ~T[:, None]) == 0
        strict = t_sub & (T[None, :] != T[:, None])
        same_t = T[None, :] == T[:, None]
        d_strict = ((D[None, :] & ~D[:, None]) == 0) & (D[None, :] != D[:, None])
        blocked = (strict | (same_t & d_strict)).any(axis=1)
        nb = rows[~blocked]
        if nb.size:
            best = max(best, int(np.abs(hist[nb] - hist[r][None, :]).sum(axis=1).max()))
    return float(best)
