"""Attack 37c: exact-tier row counts of a fitted Optimized strategy (48×48 grid, policy.grid, marginals [0, 1]) on 30
neighbours (one record moved along the first 30 policy edges) per count scale: (rows sent to the long double tier, rows
sent to the exact tier) distinct values. Run: PYTHONPATH=$PWD nice -n 10 /work/main/.venv/bin/python -W ignore
benchmarks/attack37c/fitted_tiers.py
"""
import math, numpy as np, time
from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.mechanisms import exact_measure as em, noise
S=(48,48)
pol=policy.grid(Domain.grid(S))
W=workload.identity(S) if False else workload.marginal(S,[0,1])
t0=time.time(); m=mechanisms.Optimized().for_workload(W,pol); print('fit',round(time.time()-t0,1), type(m.optimized.operator).__name__, [f.shape for f in m.optimized.factors])
A=m.optimized.operator
d=m.sensitivity(pol); mm=math.prod(f.shape[0] for f in m.optimized.factors)
g=math.frexp(noise.lattice_step(d,mm))[1]-1
print('g',g,'rows',mm)
calls={'exact':0,'ext':0}
o_x=em.exact_units; o_e=em._extended_units
def xx(f,c,x,rows,gg): calls['exact']+=len(rows); return o_x(f,c,x,rows,gg)
def e(f,c,x,rows,gg): calls['ext']+=len(rows); return o_e(f,c,x,rows,gg)
em.exact_units=xx; em._extended_units=e
rng=np.random.default_rng(0)
edges=pol.edges()[:30]
for scale in [1e5,1e7,1e8,3e8,1e9,1e10,1e11]:
    x=np.round(rng.uniform(0,scale,S[0]*S[1]))
    res=[]
    for a,b in edges:
        xp=x.copy(); xp[a]-=1; xp[b]+=1
        for k in calls: calls[k]=0
        em.lattice_units(em.Product(A,xp),g); res.append((calls['ext'],calls['exact']))
    print(scale,sorted(set(res)), 'distinct exact-row counts', len(set(r[1] for r in res)))
