"""Tests of the lab checks (blowfish_nb/labs/labNN.py) and of the lab build."""

from __future__ import annotations

import math
import re


def value_shown(message: str, expected) -> bool:
    """Whether ``message`` gives ``expected`` away: the number as a whole token (3, 3.0, 4.48, 4.4817 …), the
    word for a choice, True/False for a yes/no answer.

    >>> value_shown("q1: not yet. Hint: count edges", 3), value_shown("it is 3 edges", 3)
    (False, True)
    >>> value_shown("about 4.48", math.exp(1.5)), value_shown("answer threshold", "threshold")
    (True, True)
    """
    if isinstance(expected, bool):
        return re.search(rf"\b{expected}\b", message) is not None
    if isinstance(expected, str):
        return re.search(rf"\b{re.escape(expected.strip())}\b", message, re.IGNORECASE) is not None
    x = float(expected)
    forms = {f"{x:g}", f"{x:.2f}", f"{x:.3g}", f"{x:.4g}", f"{x:.1f}"}
    if math.isfinite(x) and x == int(x):
        forms.add(str(int(x)))
    return any(re.search(rf"(?<![\w.]){re.escape(f)}(?![\d])", message) for f in forms)
