"""The service's release path is hunted for privacy violations, as the mechanisms are (DESIGN §6).

What the service runs after counting — the plan its quote fixed, the
projection, the mechanism, the Release — is :func:`blowfish_nb.planning.execute`
on a budgeted plan from :meth:`Catalog.quote`. The probe below draws exactly
that on neighbouring histograms; the same path claiming half the ε it spends
must be flagged, so the search can fail. ``benchmarks/service_privacy_hunt.py``
runs more policies and queries at a larger size.
"""

import numpy as np
import pandas as pd

from blowfish_nb.analysis.hunt import Probe, hunt
from blowfish_nb.planning import Catalog, execute

SIZE = dict(bases=4, pairs=4, pilot=300, confirm=1500, candidates=2)


def _probe(catalog, query, claim, spend, **kwargs):
    b = catalog.quote(query, "v", epsilon=spend, **kwargs)

    def draw(x, size, rng):
        return np.stack([execute(x, b, rng=rng).answers.to_numpy() for _ in range(size)])

    return Probe(f"{b.mechanism.name} via the service path", draw, claim, "answers")


def test_the_service_path_passes_and_a_half_noise_variant_is_flagged():
    catalog = Catalog.from_data(pd.DataFrame({"v": np.arange(8) + 0.5}), {"v": 8}, policy="dp", bounds={"v": (0, 8)})
    honest = hunt(_probe(catalog, "histogram", 1.0, 1.0), catalog.policy_for(["v"]), rng=7, **SIZE)
    leaky = hunt(_probe(catalog, "histogram", 1.0, 2.0), catalog.policy_for(["v"]), rng=7, **SIZE)
    assert not honest.violation, honest.table.head()
    assert leaky.violation and leaky.lower_bound > 1.5, leaky.lower_bound
