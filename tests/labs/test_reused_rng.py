"""Noise that is private on a new generator and exact on a reused one (student-gamer gamer36b, issue 26).

gamer36b's ``fixed_noise(rng, _seen=[])`` (lab 5 q2) and ``range_noise(rng, _seen=[])`` (lab 3 q3) return the right
Laplace noise on a generator *object* they have not seen and zero on one they have: the lab's own cells (one ``rng``
for every release) then release the exact counts from the second release on. Until labs36b every grader call got a
new generator object (``plan_generator`` made each anew, the proxy pickled each call's generator into the child), so
both got the point. The fixtures (tests/labs/fixtures/gamer36b/, outputs stripped) are gamer36b's two notebooks; their
answer cells are run here as the grader runs them: in the child (:class:`CodeProxy`, which now keeps a generator's
identity), in process, and in the kernel's sample (:func:`_kernel_draws`, now runs of calls on one object).
"""

from __future__ import annotations

import json
import types
from pathlib import Path

import numpy as np
import pytest

from blowfish_nb.labs._answers import CodeProxy, _kernel_draws, decode
from blowfish_nb.labs._grade import (laplace_noise_verdict, noise_plan, plan_generators, range_noise_verdict)
from blowfish_nb.mechanisms.noise import discrete_laplace

from . import built_labs_fixture

FIXTURES = Path(__file__).parent / "fixtures" / "gamer36b"
K, S = 6, 2.0  # lab 5: 6 cells, scale 2/ε at ε = 1
LAB05_SETUP = "import types\nimport numpy as np\ncheck = types.SimpleNamespace(K=6)\neps = 1.0"
LAB03_SETUP = ("import numpy as np\nfrom blowfish_nb import Domain, policy\nfrom blowfish_nb.labs import lab03\n"
               "from blowfish_nb.mechanisms import Ordered\nk = lab03.K\nline = policy.line(Domain.grid(k))\n"
               "eps = lab03.EPSILON\nR = lab03.range_query()\nordered = Ordered()")


def _cell(notebook: str, name: str) -> str:
    cells = json.loads((FIXTURES / f"{notebook}.ipynb").read_text(encoding="utf-8"))["cells"]
    return next("".join(c["source"]) for c in cells if f"def {name}(" in "".join(c["source"]))


def _function(setup: str, cell: str, name: str):
    ns: dict = {}
    exec(setup, ns)  # noqa: S102 - the fixture's cell, as the kernel runs it
    exec(cell, ns)  # noqa: S102
    return ns[name]


def test_the_fixtures_are_gamer36bs_cells():
    for notebook, name in (("lab05_reused_rng", "fixed_noise"), ("lab03_reused_rng", "range_noise")):
        assert "_seen=[]" in _cell(notebook, name) and "r is rng" in _cell(notebook, name)


def test_gamer36b_lab05_noise_loses_the_point_in_process_and_in_the_child():
    cell = _cell("lab05_reused_rng", "fixed_noise")
    assert laplace_noise_verdict(_function(LAB05_SETUP, cell, "fixed_noise"), K, S, runs=2000, seed=1) \
        == "exact release"
    proxy = CodeProxy([LAB05_SETUP], cell, "fixed_noise")
    try:
        assert laplace_noise_verdict(proxy, K, S, runs=500, seed=2) == "exact release"
    finally:
        proxy.close()


def test_gamer36b_lab03_noise_loses_the_point():
    fn = _function(LAB03_SETUP, _cell("lab03_reused_rng", "range_noise"), "range_noise")
    # the lab's solution is whole-number noise: the extra zeros fail the χ² law test (continuous noise: "exact release")
    assert range_noise_verdict(fn, 10.0, runs=300, seed=1) in {"law", "exact release", "too little"}


def test_the_kernel_sample_calls_runs_on_one_generator_and_is_compared_run_by_run():
    """The kernel's draws of the gamed function are zero on a run's later calls; a child that is honest on them
    (a function that tells kernel from child) differs from them."""
    fn = _function(LAB05_SETUP, _cell("lab05_reused_rng", "fixed_noise"), "fixed_noise")
    runs, seed = 300, 11
    draws = decode(_kernel_draws(fn, runs, seed))
    later = np.array(noise_plan(runs, seed)["pos"]) > 0
    zero = np.array([not np.any(d) for d in draws])
    assert later.sum() > runs // 3 and np.array_equal(zero, later)
    gens = plan_generators(noise_plan(runs, seed))
    assert len({id(g) for g in gens}) == runs - int(later.sum())

    class Honest:  # the child's function: Laplace on every call, the kernel's sample attached as the plugin does
        kernel_sample = {"runs": runs, "seed": seed, "values": draws}

        def __call__(self, rng):
            return rng.laplace(0.0, S, K)

    assert laplace_noise_verdict(Honest(), K, S, runs=300, seed=1) == "kernel and grader differ"


def test_the_proxy_passes_the_same_generator_object_again():
    proxy = CodeProxy([], "def same(rng, _last=[None]):\n    s = _last[0] is rng\n    _last[0] = rng\n"
                      "    return [float(s), rng.random()]", "same")
    try:
        g, h = np.random.default_rng(3), np.random.default_rng(3)
        got = [proxy(g), proxy(g), proxy(h), proxy(g)]
        assert [x[0] for x in got] == [0.0, 1.0, 0.0, 0.0]
        ref = np.random.default_rng(3)
        assert [x[1] for x in got[:2]] == [ref.random(), ref.random()]  # the state goes both ways
        assert got[3][1] == ref.random()
    finally:
        proxy.close()


def _counter_quiet_after_3():
    calls = [0]

    def noise(rng):
        calls[0] += 1
        return rng.laplace(0.0, S, K) * (calls[0] <= 3)
    return noise


def _attribute():
    def noise(rng):
        seen = noise.__dict__.setdefault("seen", [])
        new = not any(r is rng for r in seen)
        seen.append(rng)
        return rng.laplace(0.0, S, K) * new
    return noise


def _state():
    last = {}

    def noise(rng):  # the generator continues where the last call left it: a reused generator
        again = last.get("state") == rng.bit_generator.state
        out = rng.laplace(0.0, S, K)
        last["state"] = rng.bit_generator.state
        return out * (not again)
    return noise


def _spawned():
    def noise(rng):  # the generator's SeedSequence counts its children: a mark left on the object
        first = rng.bit_generator.seed_seq.n_children_spawned == 0
        rng.bit_generator.seed_seq.spawn(1)
        return rng.laplace(0.0, S, K) * first
    return noise


def _smaller_later():
    ids = set()

    def noise(rng):  # not zero: half the scale on a generator seen before (id kept alive by the list)
        again = id(rng) in ids
        ids.add(id(rng))
        noise.keep = getattr(noise, "keep", []) + [rng]
        return rng.laplace(0.0, S / 2 if again else S, K)
    return noise


def _quiet_from_call_25():
    count, keep = {}, []

    def noise(rng):  # Laplace on a generator's first 24 calls (longer than a short run), exact from the 25th on
        keep.append(rng)
        count[id(rng)] = count.get(id(rng), 0) + 1
        return rng.laplace(0.0, S, K) * (count[id(rng)] < 25)
    return noise


#: state kept between calls, by any mechanism: each is wrong on a reused generator and must lose the point
STATEFUL = {"global counter, quiet after call 3": _counter_quiet_after_3, "function attribute": _attribute,
            "bit generator state": _state, "seed sequence spawn count": _spawned,
            "id(), half the scale": _smaller_later, "exact from a generator's 25th call": _quiet_from_call_25}


@pytest.mark.parametrize("name", sorted(STATEFUL))
def test_noise_that_keeps_state_between_calls_loses_the_point(name):
    assert laplace_noise_verdict(STATEFUL[name](), K, S, runs=2000, seed=3) is not None


@pytest.mark.parametrize("noise", [lambda r: r.laplace(0.0, S, K), lambda r: discrete_laplace(r, S, K)],
                         ids=["continuous", "discrete"])
def test_right_laplace_noise_keeps_the_point_on_runs(noise):
    for seed in range(3):
        assert laplace_noise_verdict(noise, K, S, runs=2000, seed=seed) is None


# --- the teacher's scan: a hint, not the defence ------------------------------------------------------------------

SLUGS = {"03": "03-ranges", "05": "05-break-it"}


built_labs = pytest.fixture(scope="session")(built_labs_fixture)


def test_the_scan_flags_gamer36bs_kept_generators(built_labs):
    from blowfish_nb.labs.scan import compare_notebook

    from . import built_versions, lab_number

    for name in ("lab05_reused_rng", "lab03_reused_rng"):
        path = FIXTURES / f"{name}.ipynb"
        student, solution = built_versions(built_labs, SLUGS[lab_number(path, SLUGS)])
        whys = [f.why for f in compare_notebook(path, student, solution)]
        assert any("has a mutable default argument" in w for w in whys), whys
        assert any("tests a parameter's identity (is)" in w for w in whys), whys


@pytest.mark.parametrize("source, what", [
    ("def f(rng, _seen=[]):\n    return rng.laplace()", "mutable default"),
    ("def f(rng, _seen=set()):\n    return rng.laplace()", "mutable default"),
    ("n = 0\ndef f(rng):\n    global n\n    n += 1\n    return rng.laplace() * (n < 3)", "declares global"),
    ("def f(rng):\n    f.calls = getattr(f, 'calls', 0) + 1\n    return rng.laplace()", "stores f.calls"),
    ("def f(rng, last=None):\n    return rng.laplace() * (rng is not last)", "identity"),
    ("def f(rng):\n    return rng.laplace() * (rng.bit_generator.seed_seq.n_children_spawned == 0)", "seed sequence"),
    ("def f(rng):\n    return rng.laplace(0.0, 2.0, size=6)", None),
    ("def f(rng, size=None):\n    return rng.laplace(0.0, 2.0, size=6 if size is None else size)", None),
])
def test_the_scan_names_state_kept_between_calls(source, what):
    import ast

    from blowfish_nb.labs.scan import _kept_state

    got = [why for _, why in _kept_state(ast.parse(source))]
    assert (any(what.split()[0] in w for w in got) if what else got == []), got
