"""training-runtime-fits-queue
(kueue_cohorts/policy/rules/training_runtime_fits_queue.py): a TrainJob's nodes and resources, with its runtime's,
fit what its ClusterQueue can hold and borrow."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.training_runtime_fits_queue import check_training_runtime_fits_queue
from tests.policy.fixtures import compliant, messages, stack
from tests.policy.rules.test_checkpoint_safe_runtime import FAST, _sized, _trainjob


@pytest.mark.parametrize("trainer,field", [
    ({"numNodes": 1000}, "spec.trainer.numNodes"),
    ({"resourcesPerNode": {"limits": {"cpu": "1000"}}}, "spec.trainer.resourcesPerNode.limits.cpu"),
    ({"resourcesPerNode": {"requests": {"memory": "1Pi"}}}, "spec.trainer.resourcesPerNode.requests.memory"),
    ({"numNodes": 3, "resourcesPerNode": {"requests": {"cpu": "2"}}}, "spec.trainer.resourcesPerNode.requests.cpu"),
    ({"resourcesPerNode": {"limits": {"example.com/fpga": "1"}}},
     'spec.trainer.resourcesPerNode.limits["example.com/fpga"]'),
])
def test_a_trainjob_asking_for_more_than_its_queue_can_borrow_fails(trainer, field):
    manifests = _sized(compliant())
    assert check_training_runtime_fits_queue(stack(manifests)) == []
    manifests["tj"] = _trainjob(**trainer)
    found = check_training_runtime_fits_queue(stack(manifests))
    assert {v.field for v in found} == {field}, messages(found)
    assert "Kueue can never admit this TrainJob" in found[0].message


@FAST
@given(nodes=st.integers(1, 64), cpu=st.integers(1, 8), memory_gi=st.integers(1, 16))
def test_a_trainjobs_nodes_and_resources_are_judged_against_its_queue(nodes, cpu, memory_gi):
    manifests = _sized(compliant())
    manifests["tj"] = _trainjob(numNodes=nodes, resourcesPerNode={"requests": {"cpu": str(cpu),
                                                                               "memory": f"{memory_gi}Gi"}})
    found = check_training_runtime_fits_queue(stack(manifests))
    short = sorted(f"spec.trainer.resourcesPerNode.requests.{r}" for r, over in
                   (("cpu", nodes * cpu > 4), ("memory", nodes * memory_gi > 8)) if over)
    assert sorted(v.field for v in found) == short
