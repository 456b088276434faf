"""Where the reference data live: ``$BLOWFISH_DATA`` or ``../shared/data`` beside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    """The reference-data folder; raises with what to set when it is missing."""
    path = Path(os.environ.get("BLOWFISH_DATA", ROOT.parent / "shared" / "data"))
    if not path.is_dir():
        raise SystemExit(f"reference data not found at {path}; set BLOWFISH_DATA to the folder holding dpbench/ and adult/")
    return path


def adult() -> pd.DataFrame:
    """The UCI Adult extract, row level."""
    return pd.read_csv(data_dir() / "adult" / "adult.csv", skipinitialspace=True)


def dpbench(name: str) -> np.ndarray:
    """A DPBench histogram (``"INCOME.n4096"``, ``"twitter_256_256"``, ...)."""
    return np.load(data_dir() / "dpbench" / f"{name}.npy")
