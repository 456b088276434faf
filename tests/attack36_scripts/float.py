"""Exact lattice privacy loss of a fitted signed strategy at large counts: ε_real/ε = |w − w'|₁ / (Δ/γ + m)."""
import itertools, warnings, math
import numpy as np
from scipy.optimize import linprog
from blowfish_nb import Domain, policy, workload, mechanisms
from blowfish_nb.mechanisms import noise
from blowfish_nb.ranges import random_ranges, all_ranges
warnings.simplefilter("ignore")

def worst(m, pol, tries=200, seed=0):
    A_op = m.optimized.kron if m.uses_total else m.optimized.operator
    A = A_op.dense()
    q, k = A.shape
    delta, gamma, mm = m._lattice(pol, 1.0)
    bound = delta / gamma + mm
    # LP: max sum_r sum_j |A_rj| z_j  s.t. -1 <= A z <= 1, z >= 0
    cost = -np.abs(A).sum(axis=0)
    res = linprog(cost, A_ub=np.vstack([A, -A]), b_ub=np.ones(2 * q), bounds=[(0, None)] * k, method="highs")
    z = res.x if res.status == 0 else np.ones(k)
    kappa = -res.fun if res.status == 0 else float("nan")
    rng = np.random.default_rng(seed)
    edges = pol.edges()
    best = (0, None)
    for t in range(tries):
        zz = z * (1 + 0.05 * rng.random(k)) if t else z
        c = 0.25 * 2.0**53 * gamma / max(np.abs(A @ zz).max(), 1e-300)
        x = np.round(c * zz)
        x = np.minimum(x, 2.0**52)
        vals = A_op @ x
        if np.abs(vals / gamma).max() >= 2.0**52: continue
        w = np.round(vals / gamma)
        for u, v in edges:
            if v < 0: continue
            for a, b in ((u, v), (v, u)):
                if x[a] < 1: continue
                y = x.copy(); y[a] -= 1; y[b] += 1
                w2 = np.round((A_op @ y) / gamma)
                r = np.abs(w - w2).sum() / bound
                if r > best[0]: best = (r, (x.copy(), a, b))
    return kappa, best, bound

for k, pn, pol_f, wl, kt in [(8, "theta2", lambda d: policy.threshold(d, 2), lambda k: random_ranges(k, 12, rng=k), True),
                            (8, "theta2", lambda d: policy.threshold(d, 2), lambda k: workload.prefix(k), False),
                            (8, "custom", lambda d: policy.custom(d, [(0, 3), (3, 5), (1, 2), (5, 7), (2, 6)]), lambda k: random_ranges(k, 12, rng=k), True),
                            (12, "theta3", lambda d: policy.threshold(d, 3), lambda k: random_ranges(k, 12, rng=k), True),
                            (8, "partition", lambda d: policy.partition(d, [[0,1,2,3],[4,5,6,7]]), lambda k: random_ranges(k, 12, rng=k), True)]:
    dom = Domain.grid(k); pol = pol_f(dom)
    m = mechanisms.Optimized.fit(wl(k), pol, known_total=kt, rng=1, restarts=2, max_iter=80)
    A = (m.optimized.kron if m.uses_total else m.optimized.operator).dense()
    kappa, (r, info), bound = worst(m, pol)
    print(f"k={k} {pn} total={kt} tmpl={m.optimized.info.get('template')} signed={(A < 0).any()} kappa={kappa:.3g} "
          f"bound={bound:.6g} worst loss ratio eps_real/eps={r:.6f}", info[1:] if info else None, flush=True)
