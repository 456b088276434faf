"""SciPy's L-BFGS-B (Byrd, Lu, Nocedal & Zhu 1995) for non-negative variables, without importing ``scipy.optimize``.

``import scipy.optimize`` executes the whole package (linprog, shgo, the
special functions, the FFT, …): 250–350 ms in a fresh interpreter, most
of a cold (α, β) → ε quote under dp whose strategy fit is one L-BFGS-B
descent (issue 28). The descent itself is the compiled routine
``scipy.optimize._lbfgsb.setulb``; this module loads that extension by its
file, as ``scipy.optimize`` would (same module name, same file), and runs
the reverse-communication loop of SciPy's ``_minimize_lbfgsb`` line for
line (as of SciPy 1.17), so the iterates are SciPy's own, bit for bit
(tests/strategies/test_lbfgsb.py compares them with
``scipy.optimize.minimize(method="L-BFGS-B")`` on the installed SciPy: one
whose driver loop changed fails there). When the extension is missing or
its ``setulb`` has another signature (SciPy < 1.15: the Fortran routine),
the call goes to ``scipy.optimize.minimize`` itself. Loading the extension
registers it in ``sys.modules`` under its own name (single-phase
initialisation); a later ``import scipy.optimize`` finds it there.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from typing import Callable

import numpy as np

__all__ = ["minimize_nonneg"]

#: the signature of ``setulb`` the loop below drives (SciPy ≥ 1.15, the C translation of L-BFGS-B 3.0)
SETULB_SIGNATURE = "setulb(m,x,l,u,nbd,f,g,factr,pgtol,wa,iwa,task,lsave,isave,dsave,maxls,ln_task)"
#: SciPy's own defaults of ``_minimize_lbfgsb`` (``minimize`` passes them when the options leave them out)
GTOL, MAXFUN, MAXLS = 1e-5, 15000, 20

_SETULB: list = []  # [setulb or None], loaded once


def minimize_nonneg(fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray, *, ftol: float,
                    maxiter: int, maxcor: int) -> np.ndarray:
    """The end point of L-BFGS-B on ``fun`` (value and gradient) from ``x0`` over x ≥ 0.

    The same iterates as ``scipy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B",
    bounds=[(0, None)] * n, options={"ftol": ftol, "maxiter": maxiter, "maxcor": maxcor}).x``.

    Parameters
    ----------
    fun : callable
        x ↦ (f(x), ∇f(x)), a float and an array of x's shape.
    x0 : numpy.ndarray
        The start (clipped at 0).
    ftol, maxiter, maxcor : float, int, int
        L-BFGS-B's relative tolerance on f, iteration limit and memory, as SciPy's options.

    Returns
    -------
    numpy.ndarray
        The last iterate (≥ 0).

    Examples
    --------
    >>> def fun(x):  # (x₀ − 1)² + (x₁ + 1)²: the minimum over x ≥ 0 is at (1, 0)
    ...     return float((x[0] - 1) ** 2 + (x[1] + 1) ** 2), np.array([2 * (x[0] - 1), 2 * (x[1] + 1)])
    >>> np.round(minimize_nonneg(fun, np.array([3.0, 2.0]), ftol=1e-10, maxiter=50, maxcor=5), 6).tolist()
    [1.0, 0.0]
    """
    x0 = np.clip(np.asarray(x0, dtype=float).ravel(), 0.0, np.inf)
    setulb = _setulb()
    if setulb is None:
        from scipy.optimize import minimize  # noqa: PLC0415  (SciPy moved its routine: the public call)

        return minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * x0.size,
                        options={"maxiter": maxiter, "ftol": ftol, "maxcor": maxcor}).x
    return _descend(setulb, fun, x0, ftol, maxiter, maxcor)


def _descend(setulb, fun, x0: np.ndarray, ftol: float, maxiter: int, m: int) -> np.ndarray:
    """SciPy 1.17's ``_minimize_lbfgsb`` loop for bounds (0, ∞), with its ScalarFunction's memo of (f, g)."""
    n = x0.size
    factr = ftol / np.finfo(float).eps
    nbd = np.ones(n, np.int32)  # lower bound only
    low, up = np.zeros(n), np.zeros(n)
    x = np.array(x0, dtype=np.float64)
    memo_x = x.copy()  # ScalarFunction evaluates at x0 when built, then again only where x changed
    memo_f, memo_g = _evaluate(fun, memo_x)
    nfev = 1
    f = np.array(0.0)
    g = np.zeros(n)
    wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m)
    iwa = np.zeros(3 * n, np.int32)
    task, ln_task = np.zeros(2, np.int32), np.zeros(2, np.int32)
    lsave, isave, dsave = np.zeros(4, np.int32), np.zeros(44, np.int32), np.zeros(29)
    iterations = 0
    while True:
        g = g.astype(np.float64)
        setulb(m, x, low, up, nbd, f, g, factr, GTOL, wa, iwa, task, lsave, isave, dsave, MAXLS, ln_task)
        if task[0] == 3:  # f and g at the current x
            if not np.array_equal(x, memo_x):
                memo_x = x.astype(np.float64)
                memo_f, memo_g = _evaluate(fun, memo_x)
                nfev += 1
            f, g = memo_f, memo_g
        elif task[0] == 1:  # a new iteration
            iterations += 1
            if iterations >= maxiter:
                task[0], task[1] = 5, 504
            elif nfev > MAXFUN:
                task[0], task[1] = 5, 502
        else:
            return x


def _evaluate(fun, x: np.ndarray) -> tuple[float, np.ndarray]:
    """(f, g) at a copy of x, as ScalarFunction and MemoizeJac pass them on."""
    value, grad = fun(np.copy(x))
    if not np.isscalar(value):
        value = np.asarray(value).item()
    return value, np.atleast_1d(grad)


def _setulb():
    """``scipy.optimize._lbfgsb.setulb``, loaded by file without the package's ``__init__`` (None: not found)."""
    if not _SETULB:
        _SETULB.append(_load())
    return _SETULB[0]


def _load():
    name = "scipy.optimize._lbfgsb"
    module = sys.modules.get(name)
    if module is None:
        try:
            import scipy  # noqa: PLC0415  (light: the package's __init__ imports no submodule)

            spec = importlib.machinery.PathFinder.find_spec("_lbfgsb", [os.path.join(os.path.dirname(scipy.__file__),
                                                                                      "optimize")])
            if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
                return None
            spec = importlib.util.spec_from_file_location(name, spec.origin)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except (ImportError, OSError):
            return None
    setulb = getattr(module, "setulb", None)
    doc = (getattr(setulb, "__doc__", None) or "").strip().splitlines()
    return setulb if doc and doc[0].replace(" ", "") == SETULB_SIGNATURE else None
