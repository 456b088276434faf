"""SuLQ k-means as a mechanism (issue 27): every step's noise goes through noise.lattice_noisy at the exact Δ of its
(public) assignment and ε/iterations, so the steps compose to the ε a session charges."""

import numpy as np
import pytest

from blowfish_nb import Domain, policy
from blowfish_nb.exceptions import InvalidParameterError, PolicyError
from blowfish_nb.mechanisms import noise
from blowfish_nb.mechanisms.sulq import SuLQ, _stacked
from blowfish_nb.operators import Identity


def _brute(pol, P, assign, k):
    """Move one record along every edge; the L1 change of (sizes, sums)."""
    best = 0.0
    for u, v in pol.edges():
        before, after = np.zeros(k * (1 + P.shape[1])), np.zeros(k * (1 + P.shape[1]))
        S = _stacked(P, assign, k)
        before += S[:, u]
        if v >= 0:
            after += S[:, v]
        best = max(best, float(np.abs(before - after).sum()))
    return best


@pytest.mark.parametrize("make", [lambda: policy.dp(Domain.grid((5, 4))),
                                  lambda: policy.threshold(Domain.grid((5, 4)), 2),
                                  lambda: policy.line(Domain.grid(12)), lambda: policy.grid((5, 4), 1)],
                         ids=["dp", "threshold", "line", "grid"])
def test_every_step_draws_through_noise_at_the_exact_delta_and_its_share_of_epsilon(monkeypatch, make):
    import blowfish_nb.mechanisms.sulq as sulq

    pol = make()
    d = pol.domain
    calls, stacks = [], []
    real, real_stacked = noise.lattice_noisy, sulq._stacked
    monkeypatch.setattr(sulq, "_stacked", lambda P, a, k: stacks.append((P, a.copy())) or real_stacked(P, a, k))

    def spy(values, sensitivity, epsilon, changed, rng):
        calls.append((np.asarray(values).copy(), sensitivity, epsilon, changed))
        return real(values, sensitivity, epsilon, changed, rng)

    monkeypatch.setattr(noise, "lattice_noisy", spy)
    x = np.random.default_rng(3).integers(0, 20, d.size).astype(float)
    m = SuLQ(k=3, iterations=4)
    C, sens = m.fit(x, pol, 2.0, rng=1)
    assert len(calls) == 4 and C.shape == (3, len(d.shape))
    assert sum(c[2] for c in calls) == pytest.approx(2.0) and all(c[2] == 0.5 for c in calls)
    dims = len(d.shape)
    for (values, delta, _, changed), s, (P, assign) in zip(calls, sens, stacks):
        assert changed == 2 * (dims + 1) and delta == s
        assert np.allclose(_stacked(P, assign, 3) @ x, values)  # what is released is S x of the step's assignment
        assert delta == _brute(pol, P, assign, 3)  # at the exact Δ of that assignment
        assert values[:3].sum() == pytest.approx(x.sum())
    assert max(sens) * m.iterations / 2.0 <= m.noise_scale(pol, 2.0)


def test_sulq_refuses_bad_parameters_and_categorical_domains():
    for bad in (dict(k=0), dict(k=2, iterations=0), dict(k=2, restarts=True), dict(k=2.5)):
        with pytest.raises(InvalidParameterError):
            SuLQ(**bad)
    d = Domain.from_dict({"attributes": [{"kind": "categorical", "name": "c", "categories": ["x", "y"]}]}) \
        if hasattr(Domain, "from_dict") else None
    if d is not None:
        assert not SuLQ(k=2).supports(policy.bounded(d))
        with pytest.raises(PolicyError, match="categorical"):  # refused at the door, before the counts are read
            SuLQ(k=2).release(np.ones(2), Identity(2), policy.bounded(d), 1.0, rng=0)
