"""Workload Gram matrices over buckets, the input of workload-aware measurement (DAWA's second step).

Estimating bucket totals t and spreading each uniformly over its cells
(x̂ = E t, E[j, b] = 1/|b| for cell j in bucket b), the workload's total
squared error is ⟨Cov(t̂), M⟩ with M = (WE)ᵀ(WE): M is all a workload-aware
strategy needs to know about the queries. It is computed without the k×k
Gram matrix: for ranges from their endpoints in O(q + m²), otherwise from a
sparse form of W.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..exceptions import InvalidParameterError
from ..operators import DENSE_LIMIT, Workload
from ..ranges import Boxes, as_ranges

__all__ = ["bucket_gram", "as_sparse"]


def bucket_gram(W, starts) -> np.ndarray:
    """M = (WE)ᵀ(WE) for buckets beginning at ``starts`` (sorted, first 0).

    Parameters
    ----------
    W : Workload or scipy sparse matrix
        Range workloads (identity, prefix, ranges) use their endpoints; any
        other workload is taken in sparse form.
    starts : int array
        The first cell of every bucket.

    Examples
    --------
    >>> from blowfish_nb import workload
    >>> bucket_gram(workload.prefix(4), np.array([0, 2])).tolist()  # coverages (.5,0) (1,0) (1,.5) (1,1)
    [[3.25, 1.5], [1.5, 1.25]]
    """
    starts = np.asarray(starts, dtype=np.intp)
    k = W.shape[1]
    ends = np.r_[starts[1:], k]
    sizes = (ends - starts).astype(float)
    m = starts.size
    ranges = as_ranges(W) if isinstance(W, Workload) else None
    if ranges is None:
        S = W if sp.issparse(W) else as_sparse(W)
        E = sp.csr_array((1.0 / np.repeat(sizes, sizes.astype(int)),
                          (np.arange(k), np.repeat(np.arange(m), sizes.astype(int)))), shape=(k, m))
        B = sp.csr_array(S) @ E
        return np.asarray((B.T @ B).todense())
    bucket = np.repeat(np.arange(m), sizes.astype(int))
    lo, hi = ranges.lo, ranges.hi
    bl, bh = bucket[lo], bucket[hi]
    same = bl == bh
    split = ~same
    sl, sh = bl[split], bh[split]
    left = (ends[sl] - lo[split]) / sizes[sl]  # partial coverage of the first bucket
    right = (hi[split] - starts[sh] + 1) / sizes[sh]  # and of the last
    # partial coverages p: one bucket when the range stays inside it, else the two end buckets
    n_same, n_split = int(same.sum()), int(split.sum())
    P = sp.csr_array(
        (np.r_[(hi - lo + 1)[same] / sizes[bl[same]], left, right],
         (np.r_[np.arange(n_same), n_same + np.arange(n_split), n_same + np.arange(n_split)],
          np.r_[bl[same], sl, sh])),
        shape=(n_same + n_split, m),
    )
    M = np.asarray((P.T @ P).todense())
    # fully covered buckets f = [sl + 1, sh − 1]
    a, b = sl + 1, sh - 1
    full = a <= b
    if full.any():
        a, b = a[full], b[full]
        table = np.bincount(a * m + b, minlength=m * m).reshape(m, m).astype(float)
        D = np.cumsum(table, axis=0)
        D = np.cumsum(D[:, ::-1], axis=1)[:, ::-1]  # D[i, j] = #{a <= i, b >= j}
        M += np.triu(D) + np.triu(D, 1).T
        # cross terms Σ f pᵀ: each partial value goes to its bucket's column over rows a..b
        diff = np.zeros((m + 1, m))
        for col, val in ((sl[full], left[full]), (sh[full], right[full])):
            np.add.at(diff, (a, col), val)
            np.add.at(diff, (b + 1, col), -val)
        C = np.cumsum(diff, axis=0)[:m]
        M += C + C.T
    return M


def as_sparse(W) -> sp.csr_array:
    """A workload as a sparse matrix (boxes by their cells; others through ``dense()``).

    Examples
    --------
    >>> from blowfish_nb import workload
    >>> as_sparse(workload.identity(3)).toarray().tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    if isinstance(W, Boxes):
        k = W.shape[1]
        grid = np.arange(k).reshape(W.cell_shape)
        rows, cols = [], []
        for j in range(W.shape[0]):
            block = grid[tuple(slice(l, h + 1) for l, h in zip(W.lo[j], W.hi[j]))].reshape(-1)
            rows.append(np.full(block.size, j))
            cols.append(block)
        r, c = np.concatenate(rows), np.concatenate(cols)
        return sp.csr_array((np.ones(r.size), (r, c)), shape=W.shape)
    ranges = as_ranges(W) if isinstance(W, Workload) else None
    if ranges is not None:
        length = ranges.hi - ranges.lo + 1
        rows = np.repeat(np.arange(length.size), length)
        cols = np.arange(int(length.sum())) - np.repeat(np.cumsum(length) - length, length) + np.repeat(ranges.lo, length)
        return sp.csr_array((np.ones(rows.size), (rows, cols)), shape=W.shape)
    if W.shape[0] * W.shape[1] > DENSE_LIMIT**2:
        raise InvalidParameterError(f"no sparse form for {type(W).__name__} of shape {W.shape}")
    return sp.csr_array(W.dense())
