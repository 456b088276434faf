"""The partition probe draws the law a histogram release uses (an independent attacker's reproduction, kept as a test).

PartitionFirst's and Transformed+DAWA's histogram releases draw PrivTree's partition with the bias from level
⌊D/2⌋ (``histogram_offset``). Their ``partitions`` once drew level 0 only, so the hunter never exercised the law
those releases use; DAWA is the control. On zeros at k = 64 the release's law keeps ≈ 9.5 buckets, level 0's ≈ 2.
"""
import numpy as np
import pytest

from blowfish_nb import Domain, mechanisms, policy, workload
from blowfish_nb.analysis.probes import partition_probe
from blowfish_nb.mechanisms.buckets import private_blocks
from blowfish_nb.mechanisms.dawa import histogram_offset


@pytest.mark.parametrize("mech", [mechanisms.DAWA(), mechanisms.PartitionFirst(), mechanisms.Transformed(inner="dawa")],
                         ids=["dawa (passes: the control)", "partition-first", "transformed-dawa"])
def test_the_probe_draws_the_histogram_release_law(mech):
    k, eps, n = 64, 1.0, 300
    pol, W = policy.line(Domain.grid(k)), workload.identity(k)
    x = np.zeros(k)
    probe = partition_probe(mech, pol, eps, workload=W)  # main: InvalidParameterError
    drawn = np.mean([np.unique(row).size for row in probe.draw(x, n, np.random.default_rng(0))])
    rng = np.random.default_rng(1)
    released = np.mean([private_blocks(x, pol, 0.25 * eps, 0.75 * eps, rng, offset=histogram_offset(W, k)).max() + 1
                        for _ in range(n)])
    # on zeros the release's law keeps ≈ 9.5 buckets at k = 64, level 0's ≈ 2 (attacks/out_probe_law_mismatch.txt)
    assert abs(drawn - released) < 1.0, (drawn, released)
