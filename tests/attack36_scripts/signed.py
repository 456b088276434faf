import warnings
from blowfish_nb import Domain, policy
from blowfish_nb.strategies.optimized import signed_entries, _edge_groups
warnings.simplefilter("ignore")
d1, d2 = Domain.grid(8), Domain.grid((3, 3))
cases = {"line": policy.line(d1), "theta3": policy.threshold(d1, 3), "bounded": policy.bounded(d1), "dp": policy.dp(d1),
 "partition": policy.partition(d1, [[0,1,2],[3,4,5,6,7]]), "custom no ⊥": policy.custom(d1, [(0, 7), (2, 3)]),
 "custom ⊥": policy.custom(d1, [(0, 7), (2, "⊥")]), "custom bottom=True no ⊥ edge": policy.custom(d1, [(0, 7)], bottom=True),
 "grid G1": policy.grid((3, 3), 1), "grid G2": policy.grid((3, 3), 2), "attribute 2-D": policy.attribute(d2),
 "sensitive x1 2-D": policy.sensitive_attributes(d2, ["x1"]), "dp 2-D": policy.dp(d2), "custom 2-D": policy.custom(d2, [(0, 8)])}
for n, p in cases.items():
    e = _edge_groups(p)
    print(f"{n:32s} has_bottom={p.has_bottom!s:5s} edges.bottom={e.bottom!s:5s} multi={e.multi!s:5s} signed={signed_entries(tuple(p.domain.shape), e)}")
