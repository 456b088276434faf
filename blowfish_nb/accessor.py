"""``df.blowfish`` (pandas) and ``ddf.blowfish`` (Dask): a thin façade over the release engine.

The accessors keep no state (pandas 3 makes a new accessor object on every
attribute access); every call goes to :mod:`blowfish_nb.planning` (one-call
releases) or :class:`blowfish_nb.accounting.Session`. The rows are read once,
to count the histogram; everything after works on the counts. The names below
the façade (``prepare``, ``resolve_policy``, ...) are re-exported from
:mod:`blowfish_nb.planning` and :mod:`blowfish_nb.spec` for existing callers.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ._validation import as_generator
from .domain import CELL_LIMIT
from .mechanisms import Mechanism
from .mechanisms.base import sensitivities_remembered
from .planning import (  # noqa: F401  (re-exported)
    MECHANISMS, Budgeted, Plan, Request, execute, histogram, plan_budget, prepare, release_counts,
)
from .queries import QUERIES
from .release import Release
from .spec import POLICIES, POLICY_PARAMS, check_policy_params, domain_for, resolve_policy  # noqa: F401

__all__ = ["BlowfishAccessor", "release", "release_counts", "prepare", "domain_for", "resolve_policy",
           "check_policy_params", "QUERIES", "POLICIES", "POLICY_PARAMS", "MECHANISMS", "CELL_LIMIT"]

def release(
    df: pd.DataFrame,
    query: str = "histogram",
    columns: str | Sequence[str] | None = None,
    *,
    column: str | None = None,
    bins=None,
    width: float | None = None,
    bounds=None,
    ranges=None,
    keep=None,
    policy="dp",
    theta: int | None = None,
    blocks=None,
    attributes=None,
    constraints=None,
    epsilon: float | None = None,
    accuracy: tuple[float, float] | None = None,
    mechanism: str | Mechanism = "auto",
    projection: bool = True,
    rng: None | int | np.random.Generator = None,
) -> Release:
    """Release a query over one or more columns under a Blowfish policy.

    Parameters
    ----------
    df : pandas.DataFrame
        Row-level data.
    query : {"histogram", "cumulative", "range", "marginal"} or Workload
        The query template (see :mod:`blowfish_nb.queries`).
    columns : str or list of str
        The columns binned into the domain (``column=`` is an alias for one).
    bins, width, bounds
        Binning: a count, a width, explicit edges, ``"categorical"`` or a
        list of categories; per column as a dict when there are several; or a
        ready :class:`Domain`. ``bounds`` are public (lo, hi) per column (a dict
        for several); ``df.attrs["public_bounds"]`` is used when not given;
        bounds taken from the data warn with :class:`PrivacyLeakWarning`.
    ranges : list
        For ``query="range"``: ``(lo, hi)`` per range in data units (one pair
        per column on several columns). Ranges are half-open, ``[lo, hi)``, so
        ``[(0, 40_000), (40_000, 250_000)]`` share no bin; a range covers every
        bin that meets ``[lo, hi)`` (ends inside a bin round outward), and
        ``hi`` at the upper bound takes the last bin (see :mod:`blowfish_nb.queries`).
    keep : str or list of str
        For ``query="marginal"``: the columns kept.
    policy : str, Policy or dict
        ``"dp"``, ``"bounded"``, ``"line"``, ``"threshold"`` (+ ``theta``),
        ``"grid"`` (+ ``theta``, default 1), ``"partition"`` (+ ``blocks``: lists
        of bin indices), ``"attribute"``, ``"sensitive_attributes"`` (+
        ``attributes``), a Policy over the domain, or a dict column → policy
        (a name, ``(name, params)`` or a one-column Policy) composed as in
        BlowfishDB Def. 3.2.
    epsilon : float
        The budget spent. Give exactly one of ``epsilon`` and ``accuracy``.
    accuracy : (alpha, beta)
        Spend the least ε such that, with probability ≥ 1 − β, *all* answers
        are within α of the truth at once (see :mod:`blowfish_nb.accuracy`).
    mechanism : "auto", a name of ``MECHANISMS`` or a Mechanism
        ``"auto"`` picks the lowest analytic expected error (linear ones only
        when ``accuracy`` is given).
    projection : bool
        Answer on the coarsest partition supporting the query (BlowfishDB §3).
    rng : None, int or numpy.random.Generator
        None (the default) draws the noise from OS entropy. An int seed or a
        Generator makes the noise replayable by anyone who holds it: the
        release is then marked so (``provenance["noise"]``), and the seed
        itself is never recorded.

    Returns
    -------
    Release

    Raises
    ------
    InvalidParameterError, DomainError, PolicyError
        Each naming the parameter and the value at fault; nothing is released.

    Examples
    --------
    >>> from blowfish_nb import datasets
    >>> df = datasets.salaries(n=1000, seed=1)
    >>> r = df.blowfish.release("cumulative", "age", bins=62, policy="line", epsilon=1.0, rng=0)
    >>> r.mechanism, round(r.expected_error, 4)  # noisy prefix sums; n is public under G^1 (no ⊥)
    ('Transformed+Laplace', 1.8116)
    """
    # the request's own checks, once (the columns are the frame's: prepare checks them against it)
    request = Request.of(query, ranges=ranges, keep=keep, epsilon=epsilon, accuracy=accuracy, mechanism=mechanism,
                         projection=projection)
    plan = prepare(df, request.query, columns, column=column, bins=bins, width=width, bounds=bounds, policy=policy,
                   theta=theta, blocks=blocks, attributes=attributes, constraints=constraints,
                   **request.template_parameters())
    with sensitivities_remembered():  # the Δ plan_budget computes for the noise scale serves the release too
        budgeted = plan_budget(plan, request)
        if rng is not None:  # a bad rng is refused before the pass over the rows (None, OS entropy, is always good)
            as_generator(rng)
        return execute(histogram(df, plan.domain), budgeted, rng=rng)


@pd.api.extensions.register_dataframe_accessor("blowfish")
class BlowfishAccessor:
    """``df.blowfish.release(...)`` and ``df.blowfish.session(...)``."""

    def __init__(self, df: pd.DataFrame):
        self._df = df

    def release(self, query="histogram", columns=None, **kwargs) -> Release:
        """Release ``query`` over columns of this frame; see :func:`blowfish_nb.accessor.release`."""
        return release(self._df, query, columns, **kwargs)

    def kmeans(self, columns, k: int, **kwargs):
        """Blowfish-private k-means over columns of this frame; see :func:`blowfish_nb.clustering.kmeans`."""
        from .clustering import kmeans

        return kmeans(self._df, columns, k, **kwargs)

    def session(self, budget: float, **kwargs):
        """A budgeted session over this frame; see :class:`blowfish_nb.accounting.Session`."""
        from .accounting import Session

        return Session(self._df, budget, **kwargs)


class DaskBlowfishAccessor:
    """``ddf.blowfish.release(...)`` and ``ddf.blowfish.session(...)``, as for pandas."""

    def __init__(self, ddf):
        self._ddf = ddf

    def release(self, query="histogram", columns=None, **kwargs) -> Release:
        """Release ``query`` over columns of this Dask frame (see :func:`release`)."""
        return release(self._ddf, query, columns, **kwargs)

    def session(self, budget: float, **kwargs):
        """A budgeted session over this Dask frame (see :class:`blowfish_nb.accounting.Session`)."""
        from .accounting import Session

        return Session(self._ddf, budget, **kwargs)


def register_dask() -> bool:
    """Give Dask DataFrames ``ddf.blowfish`` when Dask is installed: at once if ``dask.dataframe`` is imported
    already, else right after it first is (importing it here cost every ``import blowfish_nb`` 0.6 s); returns
    whether Dask is there to register with.

    Examples
    --------
    In a fresh interpreter, ``import blowfish_nb`` leaves Dask alone, and a Dask imported afterwards has the accessor:

    >>> import subprocess, sys
    >>> code = ("import sys, blowfish_nb; print('dask.dataframe' in sys.modules); "
    ...         "import dask.dataframe as dd, pandas as pd; "
    ...         "print(type(dd.from_pandas(pd.DataFrame({'v': [1.0]}), npartitions=1).blowfish).__name__)")
    >>> print(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    False
    DaskBlowfishAccessor
    <BLANKLINE>
    """
    if "dask.dataframe" in sys.modules:
        return _register_dask_now()
    if importlib.util.find_spec("dask") is None:
        return False
    if not any(isinstance(f, _AfterImport) and f.name == "dask.dataframe" for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport("dask.dataframe", _register_dask_now))
    return True


def _register_dask_now() -> bool:
    try:
        from dask.dataframe import DataFrame
        from dask.dataframe.extensions import register_dataframe_accessor
    except ImportError:
        return False
    if getattr(DataFrame, "blowfish", None) is not DaskBlowfishAccessor:  # Dask warns on a second registration
        register_dataframe_accessor("blowfish")(DaskBlowfishAccessor)
    return True


class _AfterImport(importlib.abc.MetaPathFinder):
    """A one-shot post-import hook: ``then()`` runs right after module ``name`` has first been executed."""

    def __init__(self, name: str, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:  # the finders that would have found it without this one
            spec = finder.find_spec(fullname, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _ThenLoader(spec.loader, self.then)
                return spec
        return None


class _ThenLoader(importlib.abc.Loader):
    """``loader``, then ``then()``; the module keeps ``loader`` as its own, and a failing ``then`` only warns."""

    def __init__(self, loader, then):
        self._loader, self._then = loader, then

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        try:
            self._then()
        except Exception as error:  # never break the user's own import
            warnings.warn(f"could not register the blowfish accessor on {module.__name__}: {error!r}", stacklevel=2)

    def __getattr__(self, name):
        return getattr(self._loader, name)
