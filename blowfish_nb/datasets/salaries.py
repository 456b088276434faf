"""A generated salary survey: the default data of the quickstart.

No download and no real person behind it: rows are drawn from a documented
model so that every notebook runs on a fresh install.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._validation import as_generator
from ..exceptions import InvalidParameterError

__all__ = ["salaries", "SALARY_BOUNDS", "AGE_BOUNDS", "DEPARTMENTS"]

SALARY_BOUNDS = (0.0, 250_000.0)
AGE_BOUNDS = (18.0, 80.0)
DEPARTMENTS = ("engineering", "sales", "operations", "research", "support")
_DEPT_WEIGHTS = (0.30, 0.25, 0.20, 0.10, 0.15)
_DEPT_MEDIAN = (95_000, 70_000, 55_000, 105_000, 48_000)


def salaries(n: int = 5_000, seed: int | None = 0) -> pd.DataFrame:
    """A synthetic, row-level salary table with public bounds attached.

    Model: department ~ categorical(0.30, 0.25, 0.20, 0.10, 0.15); age ~ 18 +
    Gamma(shape 4, scale 5), integer, capped at 80; salary ~ department median
    × (1 + 0.012·(age − 40)) × LogNormal(0, 0.35). People report round
    numbers: 40% of salaries are rounded to the nearest 5,000 and 20% of those
    to the nearest 10,000, which puts realistic spikes in the histogram.
    Salaries are clipped to the public bounds [0, 250,000].

    ``df.attrs["public_bounds"]`` records the bounds, which are part of the
    survey design (not of the data), so releases need not infer them.

    Parameters
    ----------
    n : int
        Number of rows (≥ 1).
    seed : int or None
        Seed of the generator (the same seed gives the same table).

    Examples
    --------
    >>> df = salaries(n=100, seed=3)
    >>> list(df.columns), len(df), df.attrs["public_bounds"]["age"]
    (['salary', 'age', 'department'], 100, (18.0, 80.0))
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise InvalidParameterError(f"n must be a positive integer, got {n!r}")
    rng = as_generator(seed)
    dept = rng.choice(len(DEPARTMENTS), size=n, p=_DEPT_WEIGHTS)
    age = np.minimum(18 + np.floor(rng.gamma(4.0, 5.0, size=n)), AGE_BOUNDS[1]).astype(int)
    median = np.asarray(_DEPT_MEDIAN, dtype=float)[dept]
    salary = median * (1 + 0.012 * (age - 40)) * rng.lognormal(0.0, 0.35, size=n)
    rounded = rng.random(n) < 0.4
    coarse = rounded & (rng.random(n) < 0.2)
    salary = np.where(rounded, np.round(salary / 5_000) * 5_000, np.round(salary, -2))
    salary = np.where(coarse, np.round(salary / 10_000) * 10_000, salary)
    salary = np.clip(salary, *SALARY_BOUNDS)
    df = pd.DataFrame(
        {
            "salary": salary,
            "age": age,
            "department": pd.Categorical.from_codes(dept, categories=list(DEPARTMENTS)),
        }
    )
    df.attrs["public_bounds"] = {"salary": SALARY_BOUNDS, "age": AGE_BOUNDS}
    df.attrs["description"] = "blowfish_nb.datasets.salaries: synthetic salary survey"
    return df
