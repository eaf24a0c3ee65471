"""Summaries of ClusterQueue objects for `python -m sandbox status`."""

from sandbox.status import queue_usage


def test_queue_usage_sums_flavors_and_reads_status():
    cq = {
        "metadata": {"name": "c12-training-cq"},
        "spec": {"cohortName": "c12-shared", "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
            {"name": "a", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "2", "borrowingLimit": "4"}]},
            {"name": "b", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "1"}]}]}]},
        "status": {"admittedWorkloads": 3, "pendingWorkloads": 1, "reservingWorkloads": 3, "flavorsUsage": [
            {"name": "a", "resources": [{"name": "nvidia.com/gpu", "total": "5", "borrowed": "3"}]},
            {"name": "b", "resources": [{"name": "nvidia.com/gpu", "total": "1", "borrowed": "0"}]}]},
    }
    q = queue_usage(cq)
    assert (q.cohort, q.nominal, q.borrowing_limit) == ("c12-shared", {"nvidia.com/gpu": "3"}, {"nvidia.com/gpu": "4"})
    assert (q.usage, q.borrowed) == ({"nvidia.com/gpu": "6"}, {"nvidia.com/gpu": "3"})
    assert (q.admitted, q.pending, q.reserving) == (3, 1, 3)


def test_queue_usage_of_a_fresh_queue_without_status():
    q = queue_usage({"metadata": {"name": "x"}, "spec": {}})
    assert (q.cohort, q.usage, q.admitted) == ("", {}, 0)


def test_memory_is_shown_with_its_binary_suffix():
    cq = {"metadata": {"name": "x"}, "spec": {"resourceGroups": [{"flavors": [{"name": "f", "resources": [
        {"name": "memory", "nominalQuota": "8Gi"}, {"name": "cpu", "nominalQuota": "500m"}]}]}]}}
    assert queue_usage(cq).nominal == {"memory": "8Gi", "cpu": "0.5"}
