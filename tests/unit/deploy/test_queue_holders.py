"""Issue 28 finding 10 (pure part): which workloads hold a ClusterQueue that destroy would delete, and what the
refusal says (deploy/queue_holders.py, run by `python -m deploy destroy` before the engine)."""
from __future__ import annotations

from pathlib import Path

import pytest

from deploy import queue_holders
from deploy.__main__ import stack_cluster_queues
from tests.helpers import STACKS


def workload(name: str, queue: str | None, reserved: str = "True", namespace: str = "c12-training") -> dict:
    status: dict = {"conditions": [{"type": "QuotaReserved", "status": reserved}]}
    if queue is not None:
        status["admission"] = {"clusterQueue": queue}
    return {"metadata": {"name": name, "namespace": namespace}, "status": status}


def test_only_workloads_that_reserve_quota_in_the_stacks_queues_hold_them():
    items = [workload("job-b", "c12-training-cq"), workload("job-a", "c12-training-cq", namespace="team"),
             workload("pending", None, reserved="False"), workload("evicted", "c12-training-cq", reserved="False"),
             workload("other-stack", "someone-elses-cq"), workload("serving", "c12-inference-cq")]
    assert queue_holders.holders(["c12-training-cq", "c12-inference-cq"], items) == {
        "c12-inference-cq": ["c12-training/serving"],
        "c12-training-cq": ["c12-training/job-b", "team/job-a"]}
    assert queue_holders.holders(["c12-training-cq"], [items[2], items[3], items[4]]) == {}


@pytest.mark.parametrize("count", [1, 3, 12])
def test_the_refusal_names_the_workloads_and_the_ways_out(count):
    held = {"c12-training-cq": [f"c12-training/job-{i:02d}" for i in range(count)]}
    lines = queue_holders.message("dev", held)
    assert lines[0].startswith("deploy: destroy --stack dev would wait for ever")
    assert "kueue.x-k8s.io/resource-in-use" in lines[0]
    assert "c12-training/job-00" in lines[1] and (f"and {count - 10} more" in lines[1]) == (count > 10)
    assert "stopPolicy" in lines[-1] and "HoldAndDrain" in lines[-1] and "nothing was destroyed" in lines[-1]


def test_the_stacks_queues_come_from_its_own_render():
    assert set(stack_cluster_queues(STACKS / "Pulumi.dev.yaml")) == {"c12-inference-cq", "c12-training-cq"}
    assert stack_cluster_queues(Path("/nonexistent/Pulumi.x.yaml")) == []
