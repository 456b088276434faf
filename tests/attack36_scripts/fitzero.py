import numpy as np, warnings, itertools
from blowfish_nb import Domain, policy, workload, mechanisms, accuracy
from blowfish_nb.mechanisms.optimized import AUTO
from blowfish_nb.analysis.selection import optimized_for, choose_mechanism
warnings.simplefilter("ignore")
import os; os.environ["BLOWFISH_NB_CACHE"] = "off"
shape = (4, 4)
dom = Domain.grid(shape)
pol = policy.sensitive_attributes(dom, ["x1"])
W = workload.marginal(shape, [0])
m = mechanisms.Optimized.fit(W, pol, **AUTO)
print(m, m.optimized.info.get("objectives"), "delta", m.sensitivity(pol))
m2 = optimized_for(W, pol)
print("optimized_for:", m2, m2.sensitivity(pol))
best, table = choose_mechanism(W, pol, 1.0)
print("auto:", best)
rng = np.random.default_rng(0)
edges = pol.edges()
found = 0
for t in range(2000):
    x = rng.integers(0, 50, 16).astype(float)
    u, v = edges[rng.integers(len(edges))]
    if x[u] == 0: continue
    y = x.copy(); y[u] -= 1; y[v] += 1
    a = np.asarray(m.release(x, W, pol, 1.0, rng=0)); b = np.asarray(m.release(y, W, pol, 1.0, rng=0))
    if not np.array_equal(a, b):
        print("x", x.astype(int).tolist(), "edge", (int(u), int(v)), a.tolist(), b.tolist()); found += 1
        if found >= 2: break
print("found", found, "of", t + 1)
