"""The UCI Adult extract, read from the reference data folder when it is present (never shipped).

The folder is ``$BLOWFISH_DATA`` or the first ``shared/data`` found beside the
working directory or one of its parents (``../shared/data`` from a checkout).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from ..exceptions import BlowfishError

__all__ = ["reference_data_dir", "adult", "ADULT_BOUNDS"]

#: ranges documented with the UCI Adult data (public: they describe the survey, not its records)
ADULT_BOUNDS = {"age": (17.0, 91.0), "hourweek": (1.0, 100.0), "caploss": (0.0, 4357.0), "capgain": (0.0, 100000.0)}


class ReferenceDataMissing(BlowfishError, FileNotFoundError):
    """The reference data folder is not on this machine."""


def reference_data_dir(path: str | os.PathLike | None = None) -> Path:
    """The reference data folder: ``path``, ``$BLOWFISH_DATA``, or ``shared/data`` beside the cwd or a parent.

    Raises
    ------
    ReferenceDataMissing
        When none of them exists (a fresh install has no reference data: use the embedded datasets).
    """
    candidates = [Path(path)] if path is not None else []
    if os.environ.get("BLOWFISH_DATA"):
        candidates.append(Path(os.environ["BLOWFISH_DATA"]))
    here = Path.cwd().resolve()
    candidates += [p / "shared" / "data" for p in (here, *here.parents)]
    for c in candidates:
        if c.is_dir():
            return c
    raise ReferenceDataMissing(
        "the reference data folder was not found (looked at path=, $BLOWFISH_DATA and shared/data beside the "
        "working directory and its parents); use blowfish_nb.datasets.salaries() instead"
    )


def adult(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """The UCI Adult extract (``adult/adult.csv`` in the reference data) with its documented public bounds.

    Examples
    --------
    >>> try:
    ...     df = adult()
    ... except FileNotFoundError:
    ...     df = None
    >>> df is None or df.attrs["public_bounds"]["age"] == (17.0, 91.0)
    True
    """
    df = pd.read_csv(reference_data_dir(path) / "adult" / "adult.csv", skipinitialspace=True)
    df.attrs["public_bounds"] = {c: b for c, b in ADULT_BOUNDS.items() if c in df.columns}
    df.attrs["description"] = "UCI Adult extract (reference data)"
    return df
