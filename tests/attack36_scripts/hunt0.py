import sys, warnings, os
os.environ["BLOWFISH_NB_CACHE"] = "off"
sys.path.insert(0, "tests"); warnings.simplefilter("ignore")
from test_attack36 import W4, POL4, X4
from blowfish_nb import mechanisms
from blowfish_nb.analysis.hunt import hunt
m = mechanisms.Optimized().for_workload(W4, POL4)
r = hunt(m, POL4, 1.0, workload=W4, bases=[X4], pilot=200, confirm=1000, rng=0)
print(r)
