import time, warnings
import numpy as np
from blowfish_nb import Domain, policy, workload, mechanisms
from blowfish_nb.analysis.hunt import hunt
from blowfish_nb.ranges import random_ranges
warnings.simplefilter("ignore")
K = 8
cases = [("theta2 prefix plain", policy.threshold(Domain.grid(K), 2), workload.prefix(K), False),
         ("theta2 ranges total", policy.threshold(Domain.grid(K), 2), random_ranges(K, 12, rng=K), True),
         ("custom ranges total", policy.custom(Domain.grid(K), [(0, 3), (3, 5), (1, 2), (5, 7), (2, 6)]), random_ranges(K, 12, rng=K), True),
         ("partition prefix plain", policy.partition(Domain.grid(K), [[0,1,2,3],[4,5,6,7]]), workload.prefix(K), False)]
for name, pol, W, kt in cases:
    t = time.time()
    m = mechanisms.Optimized.fit(W, pol, known_total=kt, rng=1, restarts=2, max_iter=80)
    A = (m.optimized.kron if m.uses_total else m.optimized.operator).dense()
    for eps in (0.5, 1.0):
        r = hunt(m, pol, eps, workload=W, bases=6, pilot=4000, confirm=40000, rng=0)
        print(f"{name} tmpl={m.optimized.info['template']} signed={(A<0).any()} eps={eps} lower_bound={r.lower_bound:.4f} violation={r.violation} pairs={r.pairs} ({time.time()-t:.0f}s)", flush=True)
        if len(r.table): print("   worst:", dict(r.worst[["x", "edge", "event", "count_x", "count_x_prime"]]))
