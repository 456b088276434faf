"""Attack 33: Adaptive.choose reads the data under a policy Adaptive refuses (count constraints).

The module notes say such policies "are refused before the data are read (refusal)"; release() does refuse,
but the public choose() — whose answer "may be published" and is claimed (ρε, G)-private with Δ_S for single-record
moves — returns a data-dependent choice under a Constrained policy, whose neighbours (He et al. Def. 4.1) may move
several records (histogram sensitivity 6 here, not 2), so Δ_S no longer bounds S's change: the pair
(3, 10, 3, 0, 5, 5, 0, 10) → (4, 9, 4, 0, 5, 5, 0, 9) (1 → 2 along the line, 7 → 0 restoring box {0,1}) moves S by
2Δ_S at c = 4, an exact loss of 2ρε (attacks/adaptive_choose_constrained.py).
"""

import numpy as np
import pytest

from blowfish_nb import Domain, constraints, mechanisms, policy
from blowfish_nb.exceptions import BlowfishError


def test_choose_refuses_a_policy_that_release_refuses():
    d = Domain.grid(8)
    pol = policy.constrained(policy.line(d), constraints.rectangles(d, [[(0, 1)], [(4, 5)]]))
    m = mechanisms.Adaptive()
    assert m.refusal(pol) is not None
    with pytest.raises(BlowfishError):
        m.choose(np.arange(8.0), pol, 1.0, np.random.default_rng(0))


def test_choose_refuses_epsilon_zero_with_the_projects_exception():
    with pytest.raises(BlowfishError):
        mechanisms.Adaptive().choose(np.arange(8.0), policy.dp(Domain.grid(8)), 0.0, np.random.default_rng(0))
