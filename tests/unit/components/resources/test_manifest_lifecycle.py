"""Issue 28 finding 10: the Kueue kinds whose delete Kueue holds back (ClusterQueue, ResourceFlavor) are registered
with a bounded delete, whatever component registers them (components/resources/manifest.py `lifecycle`); deploy
explains a delete that ran out (tests/unit/deploy/test_queue_holders.py, tests/e2e/test_11_queues_in_use.py)."""
from __future__ import annotations

import pulumi
import pytest

from components.model.kueue import RELEASE_WAIT_S
from components.resources.manifest import lifecycle


@pytest.mark.parametrize("kind,bounded", [("ClusterQueue", True), ("ResourceFlavor", True), ("LocalQueue", False),
                                          ("Cohort", False), ("WorkloadPriorityClass", False)])
def test_the_kinds_kueue_holds_are_registered_with_a_bounded_delete(kind, bounded):
    timeouts = lifecycle("kueue.x-k8s.io/v1beta2", kind).custom_timeouts
    if bounded:
        assert isinstance(timeouts, pulumi.CustomTimeouts) and timeouts.delete == f"{RELEASE_WAIT_S}s"
    else:
        assert timeouts is None
    assert lifecycle("v1", kind).custom_timeouts is None
