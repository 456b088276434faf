"""Brute-force Δ of fitted (signed) Optimized strategies against an independent edge enumeration."""
import itertools, warnings, time, sys
import numpy as np
from blowfish_nb import Domain, policy, workload, mechanisms
from blowfish_nb.ranges import random_ranges, all_ranges, ranges_2d
from blowfish_nb.strategies.optimized import signed_entries, _edge_groups
warnings.simplefilter("ignore")
B = -1

def indep_edges_1d(name, k, **p):
    """my own edge lists (not the policy's code)."""
    if name == "line": return [(i, i + 1) for i in range(k - 1)]
    if name == "theta": return [(i, j) for i in range(k) for j in range(i + 1, k) if j - i <= p["t"]]
    if name == "bounded": return list(itertools.combinations(range(k), 2))
    if name == "dp": return [(i, B) for i in range(k)]
    if name == "partition": return [e for b in p["blocks"] for e in itertools.combinations(b, 2)]
    if name == "custom": return p["edges"]

def brute(A, edges):
    best = 0.0
    for u, v in edges:
        d = np.abs(A[:, u]).sum() if v == B else np.abs(A[:, u] - A[:, v]).sum()
        best = max(best, d)
    return best

rows = []
def check(label, m, pol, edges, extra=()):
    A = m.optimized.operator.dense()
    if m.uses_total:  # the total row is exact and has 0 difference; drop it for the brute (it must add 0)
        A_noisy = m.optimized.kron.dense()
    else:
        A_noisy = A
    charged = float(m.sensitivity(pol))
    b = brute(A_noisy, edges)
    neg = bool((A < -1e-12).any())
    ok = charged >= b * (1 - 1e-12)
    rows.append((label, m.optimized.info.get("template"), neg, charged, b, ok))
    print(f"{label:55s} tmpl={m.optimized.info.get('template')!s:28s} signed={neg!s:5s} charged={charged:.6g} brute={b:.6g} {'OK' if ok else 'VIOLATION'}", flush=True)
    for lab2, pol2, edges2 in extra:
        if m.uses_total and pol2.has_bottom:
            continue
        c2 = float(m.sensitivity(pol2)); b2 = brute(A_noisy, edges2)
        ok2 = c2 >= b2 * (1 - 1e-12)
        print(f"   reuse under {lab2:40s} charged={c2:.6g} brute={b2:.6g} {'OK' if ok2 else 'VIOLATION'}", flush=True)
        rows.append((label + " reuse " + lab2, "", neg, c2, b2, ok2))

t0 = time.time()
for k in (8, 12):
    dom = Domain.grid(k)
    rng = np.random.default_rng(k)
    cust_edges = [(0, 3), (3, 5), (1, 2), (5, k - 1), (2, 6)]
    cust_b = [(0, 3), (3, 5), (1, B), (5, k - 1)]
    blocks = [list(range(0, k // 2)), list(range(k // 2, k))]
    pols = [("line", policy.line(dom), indep_edges_1d("line", k)),
            ("theta2", policy.threshold(dom, 2), indep_edges_1d("theta", k, t=2)),
            ("theta3", policy.threshold(dom, 3), indep_edges_1d("theta", k, t=3)),
            ("bounded", policy.bounded(dom), indep_edges_1d("bounded", k)),
            ("partition", policy.partition(dom, blocks), indep_edges_1d("partition", k, blocks=blocks)),
            ("custom", policy.custom(dom, cust_edges), cust_edges),
            ("custom-bot", policy.custom(dom, [(u, "⊥" if v == B else v) for u, v in cust_b]), cust_b),
            ("dp", policy.dp(dom), indep_edges_1d("dp", k))]
    wls = [("prefix", workload.prefix(k)), ("allranges", all_ranges(k)), ("rand", random_ranges(k, 12, rng=k))]
    for (pn, pol, edges), (wn, W) in itertools.product(pols, wls):
        print(pn, "signed_entries:", signed_entries((k,), _edge_groups(pol)))
        for kt in (False, True):
            if kt and pol.has_bottom: continue
            try:
                m = mechanisms.Optimized.fit(W, pol, known_total=kt, rng=1, restarts=2, max_iter=80)
            except Exception as e:
                print("fit refused", pn, wn, kt, type(e).__name__, e); continue
            extra = [(n2, p2, e2) for n2, p2, e2 in pols if n2 != pn]
            check(f"k={k} {pn} {wn} total={kt}", m, pol, edges, extra)
print("elapsed", time.time() - t0)
print("violations", [r for r in rows if not r[-1]])
print("signed fits", sum(r[2] for r in rows if "reuse" not in r[0]), "of", sum(1 for r in rows if "reuse" not in r[0]))
