"""The workloads and strategies users build: histograms, prefixes, trees, marginals, ranges, matrices.

A workload ``W`` (q×k) asks for ``W x`` where ``x`` is the histogram over k
cells. The builders here check their arguments and return structured
operators: the generic ones live in :mod:`blowfish_nb.operators`, the
measurement strategies in :mod:`blowfish_nb.strategies`, the range workloads
in :mod:`blowfish_nb.ranges`.

Examples
--------
>>> from blowfish_nb import workload
>>> workload.prefix(4).shape, workload.hierarchical(4).shape, workload.all_ranges(3).shape
((4, 4), (7, 4), (6, 3))
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
import scipy.sparse as sp

from .exceptions import InvalidParameterError
# the classes live in operators and strategies; importing them from here still works (not part of __all__)
from .operators import DENSE_LIMIT, Identity, Kron, Matrix, Prefix, Stack, Total, Workload  # noqa: F401
from .ranges import all_ranges, random_ranges, ranges_2d
from .strategies import BlockTrees, Haar, Tree  # noqa: F401

__all__ = [
    "identity", "prefix", "hierarchical", "haar", "kron", "marginal", "matrix",
    "all_ranges", "random_ranges", "ranges_2d",
]


def identity(k: int) -> Identity:
    """The histogram workload over ``k`` cells."""
    return Identity(_check_k(k))


def prefix(k: int) -> Prefix:
    """The cumulative-histogram workload over ``k`` cells."""
    return Prefix(_check_k(k))


def hierarchical(k: int, branching: int = 2) -> Tree:
    """The b-ary hierarchical strategy over ``k`` cells."""
    if isinstance(branching, bool) or not isinstance(branching, Integral) or branching < 2:
        raise InvalidParameterError(f"branching must be an integer >= 2, got {branching!r}")
    return Tree(_check_k(k), int(branching))


def kron(*factors: Workload) -> Kron:
    """The Kronecker product of per-attribute operators (C order: the last factor varies fastest)."""
    if not factors or not all(isinstance(f, Workload) for f in factors):
        raise InvalidParameterError(f"kron needs one or more Workload factors, got {factors!r}")
    return Kron(factors)


def haar(k: int) -> Haar:
    """Privelet's Haar strategy over ``k = 2^L`` cells."""
    return Haar(_check_k(k))


def marginal(shape, keep) -> Kron:
    """The marginal over the attributes ``keep`` of a multi-attribute domain.

    Parameters
    ----------
    shape : Domain or tuple of int
        The domain (or its per-attribute sizes, C order).
    keep : int, str or sequence of them
        Attributes kept (positions, or names when a Domain is given); the
        others are summed out.

    Returns
    -------
    Kron
        Identity on kept attributes ⊗ Total on the others: one query per
        combination of kept values.

    Examples
    --------
    >>> M = marginal((2, 3), [0])  # row sums of a 2×3 table
    >>> (M @ np.arange(6.0)).tolist()
    [3.0, 12.0]
    """
    names = None
    if hasattr(shape, "shape") and hasattr(shape, "names"):
        names = list(shape.names)
        shape = shape.shape
    if isinstance(shape, Integral):
        shape = (shape,)
    try:
        shape = tuple(_check_k(s) for s in shape)
    except TypeError:
        raise InvalidParameterError(f"shape must be a Domain or a tuple of sizes, got {shape!r}") from None
    if isinstance(keep, (str, Integral)):
        keep = [keep]
    axes = set()
    for a in keep:
        if isinstance(a, str):
            if names is None or a not in names:
                raise InvalidParameterError(f"keep names an unknown attribute {a!r}; attributes: {names}")
            a = names.index(a)
        if isinstance(a, bool) or not isinstance(a, Integral) or not 0 <= a < len(shape):
            raise InvalidParameterError(f"keep must name attributes 0..{len(shape) - 1}, got {a!r}")
        axes.add(int(a))
    return Kron([Identity(k) if a in axes else Total(k) for a, k in enumerate(shape)])


def matrix(A) -> Matrix:
    """A custom workload from a q×k matrix (numpy array or scipy sparse; finite entries).

    Examples
    --------
    >>> matrix([[1, 0], [1, 1]]).shape
    (2, 2)
    """
    try:
        M = Matrix(A if sp.issparse(A) else np.asarray(A, dtype=float))
    except (TypeError, ValueError):
        raise InvalidParameterError(f"matrix needs a 2-D numeric array, got {type(A).__name__}") from None
    if M.A.ndim != 2 or 0 in M.shape:
        raise InvalidParameterError(f"matrix needs a non-empty 2-D array, got shape {M.shape}")
    if not np.all(np.isfinite(M.A.data)):
        raise InvalidParameterError("matrix entries must be finite (an infinite weight has unbounded sensitivity)")
    return M


def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
        raise InvalidParameterError(f"k must be a positive integer, got {k!r}")
    return int(k)
