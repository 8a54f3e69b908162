"""The anomaly matrix in small: every mode under every fault, on real brokers.

Every cell is held to both halves of the course's claim: nothing outside what the mode
allows under that fault (``result.valid``), and the anomaly the course claims for the
cell (:data:`deliverylab.modes.CLAIMS`) -- in every run.
"""

from __future__ import annotations

import pytest

from deliverylab.matrix import run_matrix, table
from deliverylab.modes import MODES
from deliverylab.scenario import FAULTS, Scenario

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("mode", list(MODES))
def test_every_fault_matches_the_course_claims(cluster, mode):
    runs = run_matrix(cluster, modes=[mode], faults=FAULTS[1:], seeds=[7], values=100)
    print(table(runs))
    assert {run.fault for run in runs} == set(FAULTS[1:])
    for run in runs:
        assert run.result.valid, (run.fault, run.result.summary())
    failures = [msg for run in runs for msg in run.failures()]
    assert failures == []
    # Each run ended healed: every broker up again, ready for the next run.
    assert set(cluster.status().values()) == {"up"}


def test_a_run_without_faults_is_valid_in_every_mode(cluster):
    for mode in MODES:
        run = Scenario(mode, "none", values=50).run(1, cluster)
        assert run.result.valid, run.result.summary()
        assert run.result.stats["values_sent"] == 50 + 50  # input sends + pipeline sends
