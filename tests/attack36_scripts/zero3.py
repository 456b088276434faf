import numpy as np, itertools
from blowfish_nb import Domain, policy, workload, mechanisms
from blowfish_nb.strategies.optimized import DenseFactor, OptimizedStrategy
from blowfish_nb.operators import Kron
dom = Domain.grid((2, 3))
pol = policy.sensitive_attributes(dom, [dom.names[1]])
W = workload.marginal((2, 3), [0])
X = np.kron(np.diag([0.1, 0.7]), np.ones((1, 3)))  # marginal on x0, real weights
X = np.vstack([X, np.kron(np.eye(2), np.ones((1,3)))*0.3])
f = DenseFactor(X)
print("delta", pol.sensitivity(f))
m = mechanisms.Optimized(OptimizedStrategy((f,), pol.sensitivity(f), 0.0, (2, 3)))
found = 0
for x in itertools.product(range(4), repeat=6):
    x = np.array(x, float)
    for u, v in pol.edges():
        if x[u] == 0: continue
        y = x.copy(); y[u] -= 1; y[v] += 1
        a = m.release(x, W, pol, 1.0, rng=0); b = m.release(y, W, pol, 1.0, rng=0)
        a = np.asarray(getattr(a, "values", a)); b = np.asarray(getattr(b, "values", b))
        if not np.array_equal(a, b):
            print("x", x, "x'", y, a.tolist(), b.tolist()); found += 1
            break
    if found >= 3: break
print("found", found)
