"""Promise 2 on the sandbox: Kueue counts every pod, unless its manager Configuration takes the quota out of play.

The harm, on the real Kueue 0.19.2 manager of the session's sandbox (one node, one `nvidia.com/gpualloc`): a
ClusterQueue with a nominalQuota of 1 GPU admits one Job of 1 GPU and holds the second back; once the manager runs
with `resources.excludeResourcePrefixes: [nvidia.com/]` (written into its Configuration file, the manager restarted
as its pod would be), the same queue admits both, and the second Job's pod waits for a GPU the node does not have.
The refusal: the same Configuration, next to that same live ClusterQueue, is refused by the rule book (what the pack
and the settings check run), and the stack setting that would render it is refused at its key.

The manager's Configuration is restored (and the manager restarted again) when the module ends.
"""

from __future__ import annotations

import os
import signal
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
import yaml
from e2e_support import KUEUE, Cluster, condition, is_true, used, wait_for
from kubernetes import client as k8s

from kueue_cohorts.components.checks.validation import validate
from kueue_cohorts.policy.rules.book import run
from kueue_cohorts.policy.rules.vocabulary.objects import from_resource
from kueue_cohorts.sandbox.cluster import Sandbox
from tests.helpers import stack_raw

NAMESPACE = "p2-counts"
QUEUE = "p2-counts-cq"
LOCAL_QUEUE = "p2-counts-lq"
FLAVOR = "p2-counts-default"
ONE_GPU = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpualloc": "1"}
EXCLUDED = ["nvidia.com/"]


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except FileNotFoundError:
        return []
    return [int(p) for p in text.split()]


def _ready(sandbox: Sandbox) -> bool:
    port = sandbox.state().ports["kueue-health"]
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:  # noqa: S310 - loopback
            return bool(answer.status == 200)
    except OSError:
        return False


def restart_kueue(sandbox: Sandbox) -> None:
    """Stop the running Kueue manager (the child of the sandbox's restart loop, `sandbox.process.restarting`) and wait
    until the loop has started a new one that answers /readyz: it reads its Configuration file again."""
    loop = sandbox.state().processes["kueue"].pid
    [old] = wait_for(lambda: _children(loop), 30, "the running Kueue manager")
    os.kill(old, signal.SIGTERM)
    wait_for(lambda: [p for p in _children(loop) if p != old], 90, "the restarted Kueue manager")
    wait_for(lambda: _ready(sandbox), 120, "the restarted Kueue manager's /readyz")


@pytest.fixture(scope="module")
def gpu_queue(cluster: Cluster) -> Iterator[dict]:
    """A ResourceFlavor, a ClusterQueue of 1 GPU (in no cohort) for namespace p2-counts, its LocalQueue."""
    cluster.ensure_namespace(NAMESPACE)
    cluster.custom.create_cluster_custom_object(*KUEUE, "resourceflavors", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}, "spec": {}})
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": QUEUE},
        "spec": {"namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                                                             "values": [NAMESPACE]}]},
                 "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpualloc"],
                                     "flavors": [{"name": FLAVOR, "resources": [
                                         {"name": "cpu", "nominalQuota": "4"},
                                         {"name": "memory", "nominalQuota": "8Gi"},
                                         {"name": "nvidia.com/gpualloc", "nominalQuota": "1"}]}]}]}}
    cluster.custom.create_cluster_custom_object(*KUEUE, "clusterqueues", queue)
    cluster.custom.create_namespaced_custom_object(*KUEUE, NAMESPACE, "localqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": LOCAL_QUEUE, "namespace": NAMESPACE}, "spec": {"clusterQueue": QUEUE}})
    yield queue
    for job in cluster.batch.list_namespaced_job(NAMESPACE).items:
        cluster.delete_job(job)
    cluster.custom.delete_namespaced_custom_object(*KUEUE, NAMESPACE, "localqueues", LOCAL_QUEUE)
    cluster.custom.delete_cluster_custom_object(*KUEUE, "clusterqueues", QUEUE)
    cluster.custom.delete_cluster_custom_object(*KUEUE, "resourceflavors", FLAVOR)
    cluster.core.delete_namespace(NAMESPACE)


@pytest.fixture(scope="module")
def excluded_config(sandbox: Sandbox) -> Iterator[dict]:
    """The sandbox manager's Configuration with the GPU excluded from accounting, for the test; restored after."""
    path = sandbox.paths.config / "kueue.yaml"
    original = path.read_text()
    config = yaml.safe_load(original)
    config.setdefault("resources", {})["excludeResourcePrefixes"] = list(EXCLUDED)
    try:
        yield config
    finally:
        path.write_text(original)
        restart_kueue(sandbox)


def _two_jobs(cluster: Cluster, tag: str) -> tuple[k8s.V1Job, k8s.V1Job]:
    first = cluster.submit_job(NAMESPACE, f"{tag}-first", LOCAL_QUEUE, ONE_GPU)
    wait_for(lambda: is_true(cluster.workload_of(first), "Admitted"), 60, "the first 1-GPU Job to be admitted")
    second = cluster.submit_job(NAMESPACE, f"{tag}-second", LOCAL_QUEUE, ONE_GPU)
    return first, second


def test_a_configuration_that_excludes_the_gpu_admits_past_quota_and_capacity(cluster, sandbox, gpu_queue,
                                                                             excluded_config):
    # Counted: the queue's 1 GPU is taken by the first Job, so Kueue holds the second back for quota.
    first, second = _two_jobs(cluster, "counted")

    def held_for_quota() -> bool:
        reserved = condition(cluster.workload_of(second), "QuotaReserved")
        return bool(reserved and reserved["status"] == "False" and "nvidia.com/gpualloc" in reserved["message"])

    wait_for(held_for_quota, 60, "Kueue to hold the second Job back for nvidia.com/gpualloc quota")
    for job in (first, second):
        cluster.delete_job(job)
    wait_for(lambda: not cluster.kueue_objects("workloads", NAMESPACE), 60, "the Workloads to be gone")

    # Not counted: the manager reads a Configuration that excludes nvidia.com/ ...
    (sandbox.paths.config / "kueue.yaml").write_text(yaml.safe_dump(excluded_config, sort_keys=False))
    restart_kueue(sandbox)
    first, second = _two_jobs(cluster, "uncounted")
    # ... and admits the second Job too: 2 GPUs admitted against a quota of 1 on a node with 1.
    wait_for(lambda: is_true(cluster.workload_of(second), "Admitted"), 60, "the second 1-GPU Job to be admitted")
    # Kueue counts none of the 2 GPUs in use (cpu and memory still are).
    wait_for(lambda: used(cluster.cluster_queue(QUEUE), "cpu") == 2, 30, "the queue's status to show both Jobs")
    assert used(cluster.cluster_queue(QUEUE), "nvidia.com/gpualloc") == 0

    def unschedulable() -> bool:
        pods = cluster.core.list_namespaced_pod(NAMESPACE, label_selector=f"job-name={second.metadata.name}").items
        return any(c.type == "PodScheduled" and c.status == "False" and "nvidia.com/gpualloc" in (c.message or "")
                   for p in pods for c in (p.status.conditions or []))

    # The pods that did start: one of them waits for a GPU no node has.
    wait_for(lambda: len(cluster.core.list_namespaced_pod(NAMESPACE).items) == 2, 60, "both admitted Jobs' pods")
    wait_for(unschedulable, 90, "the second pod to be Unschedulable for nvidia.com/gpualloc", interval=1)

    # The refusal: that Configuration, judged next to the live ClusterQueue, is refused by the rule book ...
    config_map = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
                  "data": {"controller_manager_config.yaml": yaml.safe_dump(excluded_config)}}
    live_queue = cluster.cluster_queue(QUEUE)
    objects = [from_resource("kubernetes:core/v1:ConfigMap", config_map, urn="", resource_name="config"),
               from_resource("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", live_queue, urn="", resource_name="cq")]
    found = [v for rule, v in run([o for o in objects if o is not None], {})
             if rule.name == "cluster-queue-covers-pod-resources"]
    assert [v.value for v in found] == ["nvidia.com/gpualloc"]
    assert "takes quota out of play" in found[0].message
    # ... and the stack setting that would render it is refused at its key, with the fix.
    raw = stack_raw("dev")
    raw.setdefault("kueue", {})["resources"] = {"excludeResourcePrefixes": list(EXCLUDED)}
    problems = [(p.key, p.fix) for p in validate(raw).problems]
    assert ("kueue-cohorts:kueue.resources.excludeResourcePrefixes",
            "remove the entry that drops or replaces 'nvidia.com/gpualloc', or take 'nvidia.com/gpualloc' out of "
            "these queues' quota") in problems
