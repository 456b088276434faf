"""Fitted strategies kept on disk, so ``mechanism="auto"`` fits each (workload, policy) once, not once per process.

``mechanism="auto"`` quotes ``Optimized()`` on a strategy fitted to the
workload under the policy (:func:`blowfish_nb.analysis.selection.optimized_for`);
the fit takes 0.1–3 s on a few hundred cells, and a new interpreter (a
notebook restarted, a script run again) paid it again for the same question.
This module keeps each fitted strategy in a file and reads it back.

**Why a cache cannot leak data.** A strategy is a function of public inputs
only — the workload, the policy, the fit's options and seed — never of the
data, so a stored strategy holds nothing about any record. It does describe
the question asked (a strategy fitted to some ranges hints at the ranges), so
it lives under the user's own cache folder, and only the default memory scope
uses it: the analyst service's per-analyst scopes (:func:`~.selection.memo_scope`)
never read or write it, so one analyst's quote time says nothing about another's
questions, across restarts too.

**Exact key.** The file name is a digest of :func:`~.selection.public_key` of
(workload, policy, the fit's options) — every array that defines the workload,
the policy's family, domain and parameters, by value — together with a digest
of the fitting code's own source and the numpy/scipy versions, so a changed
optimiser never reads an old fit. Inputs without an exact key are never stored.

**Never trusted.** A file is read without pickle (``np.load(allow_pickle=False)``);
its pseudo-inverse must satisfy the four Penrose conditions for its factor and
its inverse Gram must equal pinv·pinvᵀ (else the quoted error could differ from
the strategy's), and its Δ is recomputed by the policy's edge-difference code
and must equal the stored one. A file that fails any check is ignored (and
rewritten by the fit). Privacy never rests on the file: every release charges
the Δ its mechanism recomputes from the measured factors
(:meth:`~blowfish_nb.mechanisms.base.MatrixMechanism.sensitivity`).

**Where.** ``$BLOWFISH_NB_CACHE`` names the folder; ``off`` (or ``0``, empty)
turns the disk off; unset: ``$XDG_CACHE_HOME/blowfish_nb/strategies`` (else
``~/.cache/blowfish_nb/strategies``). A folder that cannot be written is
skipped silently: the cache only saves time, and a quote is the same with or
without it (the fit is seeded, so a stored strategy is the one a fit returns).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from ..mechanisms import Optimized
from ..operators import Kron
from ..policy import Policy
from ..strategies.known_total import KnownTotalStrategy
from ..strategies.optimized import DenseFactor, OptimizedStrategy

__all__ = ["cache_dir", "load", "store", "ENV"]

#: the environment variable naming the folder (``off``: no disk)
ENV = "BLOWFISH_NB_CACHE"
#: the stored layout's version (a new layout never reads an old file)
FORMAT = "1"
#: relative tolerance of the Penrose checks on a stored pseudo-inverse
PENROSE_TOL = 1e-8
_KINDS = {"optimized": OptimizedStrategy, "known total": KnownTotalStrategy}


def cache_dir() -> Path | None:
    """The folder of stored strategies, or None when the disk cache is off.

    Examples
    --------
    >>> import os
    >>> old = os.environ.get(ENV)
    >>> os.environ[ENV] = "off"
    >>> cache_dir() is None
    True
    >>> os.environ[ENV] = "/tmp/strategies"
    >>> str(cache_dir())
    '/tmp/strategies'
    >>> _ = os.environ.pop(ENV) if old is None else os.environ.__setitem__(ENV, old)
    """
    value = os.environ.get(ENV)
    if value is not None:
        if value.strip().lower() in ("", "off", "0", "false", "none"):
            return None
        return Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "blowfish_nb" / "strategies"


def load(key, policy: Policy) -> Optimized | None:
    """The stored ``Optimized`` for ``key`` (a :func:`~.selection.public_key`), verified under ``policy``; else None."""
    path = _path(key)
    if path is None or not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            kind = str(z["kind"])
            shape = tuple(int(n) for n in z["shape"])
            sensitivity, objective = float(z["sensitivity"]), float(z["objective"])
            info = json.loads(str(z["info"]))
            factors = []
            for i in range(int(z["count"])):
                X, P, N = (np.array(z[f"{name}{i}"], dtype=float) for name in ("X", "pinv", "inverse_gram"))
                if not _penrose(X, P, N):
                    return None
                factors.append(DenseFactor(X, pinv=P, inverse_gram=N))
    except (OSError, KeyError, ValueError, TypeError, zipfile.BadZipFile):
        return None
    if kind not in _KINDS or shape != tuple(policy.domain.shape) or not factors:
        return None
    if kind == "known total" and policy.has_bottom:  # the total is not public here: a miss, refitted and overwritten
        return None
    op = factors[0] if len(factors) == 1 else Kron(factors)
    if float(policy.sensitivity(op)) != sensitivity:  # the edge-difference code decides, never the file
        return None
    return Optimized(_KINDS[kind](tuple(factors), sensitivity, objective, shape, info))


def store(key, mechanism: Optimized) -> None:
    """Keep ``mechanism``'s strategy under ``key`` (nothing when the key is None or the disk is off)."""
    path = _path(key)
    s = mechanism.optimized
    if path is None or s is None:
        return
    kind = "known total" if isinstance(s, KnownTotalStrategy) else "optimized"
    arrays = {"kind": np.array(kind), "shape": np.array(s.shape, dtype=np.int64),
              "sensitivity": np.array(float(s.sensitivity)), "objective": np.array(float(s.objective)),
              "info": np.array(json.dumps(s.info, default=float)), "count": np.array(len(s.factors))}
    for i, f in enumerate(s.factors):
        arrays.update({f"X{i}": f.X, f"pinv{i}": f.pinv, f"inverse_gram{i}": f.inverse_gram})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **arrays)
            os.replace(tmp, path)  # atomic: a reader sees the old file or the whole new one
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except (OSError, TypeError, ValueError):
        return


def _path(key) -> Path | None:
    folder = cache_dir()
    if key is None or folder is None:
        return None
    digest = hashlib.blake2b(repr((FORMAT, _code_digest(), key)).encode(), digest_size=20).hexdigest()
    return folder / f"{digest}.npz"


_CODE: list = []


def _code_digest() -> str:
    """A digest of the fitting code's source and the numerical libraries' versions (computed once)."""
    if not _CODE:
        import scipy  # noqa: PLC0415

        root = Path(__file__).resolve().parent.parent
        h = hashlib.blake2b(f"{np.__version__} {scipy.__version__}".encode(), digest_size=20)
        files = sorted(root.glob("strategies/*.py")) + sorted(root.glob("policy/*.py"))
        for path in files + [root / "mechanisms" / "optimized.py", Path(__file__).resolve()]:
            h.update(path.name.encode())
            h.update(path.read_bytes())
        _CODE.append(h.hexdigest())
    return _CODE[0]


def _penrose(X, P, N) -> bool:
    """P is X's Moore–Penrose inverse (all four conditions) and N = P Pᵀ, to ``PENROSE_TOL`` relative."""
    if X.ndim != 2 or P.shape != X.shape[::-1] or N.shape != (X.shape[1], X.shape[1]):
        return False
    if not (np.isfinite(X).all() and np.isfinite(P).all() and np.isfinite(N).all()):
        return False

    def close(a, b):
        return np.abs(a - b).max(initial=0.0) <= PENROSE_TOL * max(1.0, np.abs(b).max(initial=0.0))

    XP, PX = X @ P, P @ X
    return close(XP @ X, X) and close(PX @ P, P) and close(XP, XP.T) and close(PX, PX.T) and close(P @ P.T, N)
