"""Every generic operator (blowfish_nb.operators) agrees with its dense form, method by method."""

import ast
import sys
from pathlib import Path

import numpy as np
import pytest

from blowfish_nb import InvalidParameterError, operators
from blowfish_nb.operators import ColumnSlice, Identity, Kron, Matrix, Prefix, Stack, Total, Workload
from blowfish_nb.strategies import Haar, Tree


def assert_matches_dense(op: Workload, rng: np.random.Generator, pairs: int = 60) -> None:
    """Compare each method ``op``'s class implements with the same computation on ``op.dense()``.

    matvec, rmatvec, column_norms and column_differences always; column_overlaps
    for binary operators and matrices (their contract); solve where the class
    has one (square strategies), checked as an inverse of the dense matrix.
    """
    M = op.dense()
    q, k = op.shape
    assert M.shape == (q, k)
    x, y = rng.normal(size=k), rng.normal(size=q)
    np.testing.assert_allclose(op @ x, M @ x, atol=1e-9)
    np.testing.assert_allclose(op.rmatvec(y), M.T @ y, atol=1e-9)
    u, v = rng.integers(0, k, size=pairs), rng.integers(0, k, size=pairs)
    v[: pairs // 6] = u[: pairs // 6]  # some pairs of one cell
    np.testing.assert_allclose(op.column_norms(u), np.abs(M[:, u]).sum(axis=0))
    np.testing.assert_allclose(op.column_differences(u, v), np.abs(M[:, u] - M[:, v]).sum(axis=0))
    if op.binary or isinstance(op, Matrix):
        assert not op.binary or np.isin(M, (0.0, 1.0)).all()
        np.testing.assert_allclose(op.column_overlaps(u, v), np.sum(M[:, u] * M[:, v], axis=0))
    if _solves(op):
        np.testing.assert_allclose(op.solve(M @ x), x, atol=1e-9)
        np.testing.assert_allclose(M @ op.solve(y), y, atol=1e-9)


def _solves(op) -> bool:
    """The class implements ``solve`` (a Kronecker product: when every factor does)."""
    if isinstance(op, Kron):
        return all(_solves(f) for f in op.factors)
    return type(op).solve is not Workload.solve


CASES = {
    "identity 1": lambda: Identity(1),
    "identity 33": lambda: Identity(33),
    "total 7": lambda: Total(7),
    "prefix 1": lambda: Prefix(1),
    "prefix 33": lambda: Prefix(33),
    "stack identity+prefix": lambda: Stack([Identity(9), Prefix(9)], [1.0, 0.25]),
    "stack tree+total": lambda: Stack([Tree(10, 3), Total(10)], [2.0, 1.0]),
    "kron prefix⊗identity": lambda: Kron([Prefix(4), Identity(5)]),
    "kron tree⊗total⊗prefix": lambda: Kron([Tree(3, 2), Total(2), Prefix(4)]),
    "kron haar⊗haar": lambda: Kron([Haar(4), Haar(8)]),
    "kron haar⊗prefix": lambda: Kron([Haar(4), Prefix(3)]),
    "matrix 0/1": lambda: Matrix(np.random.default_rng(5).integers(0, 2, size=(6, 9))),
    "matrix weights": lambda: Matrix(np.random.default_rng(6).normal(size=(8, 7))),
    "slice of prefix": lambda: ColumnSlice(Prefix(8), 5),
    "slice of tree": lambda: ColumnSlice(Tree(9, 3), 7),
    "slice of haar": lambda: ColumnSlice(Haar(16), 11),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_operator_matches_dense(case):
    assert_matches_dense(CASES[case](), np.random.default_rng(len(case)))


def test_column_slice_is_the_first_columns_of_its_base():
    base = Tree(16, 4)
    S = ColumnSlice(base, 10)
    np.testing.assert_array_equal(S.dense(), base.dense()[:, :10])
    assert S.binary and S.diameter_at_extremes


def test_stack_weights_scale_its_parts():
    parts = [Identity(6), Prefix(6)]
    S = Stack(parts, [3.0, 0.5])
    np.testing.assert_allclose(S.dense(), np.vstack([3.0 * np.eye(6), 0.5 * np.tril(np.ones((6, 6)))]))


def test_dense_refuses_large_domains():
    with pytest.raises(InvalidParameterError, match="dense"):
        Prefix(operators.DENSE_LIMIT + 1).dense()
    with pytest.raises(InvalidParameterError, match="dense"):
        Kron([Identity(100), Identity(100)]).dense()


def test_operators_and_strategies_import_nothing_above_them():
    """DESIGN §2: operators rest on exceptions only; strategies on operators, ranges, policy and below (not workload, which imports them; no mechanism)."""
    package = Path(operators.__file__).parent
    below = {"_validation", "_arrays", "exceptions"}
    siblings = {p.stem for p in (package / "strategies").glob("*.py")}
    allowed = {
        package / "operators.py": below,
        **{p: below | siblings | {"domain", "policy", "operators", "ranges"} for p in (package / "strategies").glob("*.py")},
    }
    libraries = set(sys.stdlib_module_names) | {"numpy", "scipy"}
    for path, ok in allowed.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                top = (node.module or "").split(".")[0]
                assert top in ok, f"{path.name} imports .{node.module}"
            if isinstance(node, (ast.Import, ast.ImportFrom)) and getattr(node, "level", 0) == 0:
                names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                assert all(n.split(".")[0] in libraries for n in names), f"{path.name} imports {names}"


def test_range_column_differences_and_norms_on_unsorted_and_sorted_ends():
    """Issue 28: sorted ends are used as they are (no re-sort per edge chunk); unsorted ones still sorted first."""
    from blowfish_nb.ranges import Ranges

    rng = np.random.default_rng(4)
    k = 40
    for hi in (np.arange(k), rng.permutation(k), np.sort(rng.integers(0, k, 25)), rng.integers(0, k, 25)):
        R = Ranges(k, np.zeros(hi.size, dtype=int), hi)
        D = R.dense()
        u, v = rng.integers(0, k, 60), rng.integers(0, k, 60)
        np.testing.assert_array_equal(R.column_differences(u, v), np.abs(D[:, u] - D[:, v]).sum(axis=0))
        np.testing.assert_array_equal(R.column_norms(u), np.abs(D[:, u]).sum(axis=0))
