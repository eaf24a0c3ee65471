"""(issue 18) Two GPU types: the `mixed` stack (one H100 node, one A100 node, a ResourceFlavor each, inference owning
2 GPUs in each flavor, training borrowing either) applied with `pulumi up` to the sandbox, whose kwok nodes are
rebuilt from the stack's two node pools. Against the real Kueue manager and kube-scheduler:
- training borrows the idle A100 quota while inference holds the H100 flavor;
- inference reclaiming in one flavor evicts only the training Workload that borrowed in that flavor;
- a workload whose nodeSelector names one GPU type is admitted only in that flavor and runs on that node.
"""

from __future__ import annotations

from typing import Mapping, Optional

import pytest
from e2e_support import PRIORITY_LABEL, QUEUE_LABEL, admitted_in, borrowed, condition, is_true, wait_for
from kubernetes import client as k8s

from kueue_cohorts.components.settings.stackfile import stack_path
from kueue_cohorts.sandbox.kwok import node_name

GPU = "nvidia.com/gpu"
PRODUCT = "nvidia.com/gpu.product"
H100, A100 = "NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-40GB"
INFERENCE_NS, TRAINING_NS = "mixed-inference", "mixed-training"
INFERENCE = ("mixed-inference-lq", "mixed-inference-prio")
TRAINING = ("mixed-training-lq", "mixed-training-prio")
#: Both GPUs of one node (the inference nominalQuota of one flavor).
TWO_GPUS = {"cpu": "1", "memory": "1Gi", GPU: "2"}


@pytest.fixture(scope="module")
def mixed_stack(sandbox, cluster, project):
    """The sandbox's kwok nodes rebuilt from the mixed stack's node pools (h100-0, a100-0) and the stack applied with
    `pulumi up`; destroyed afterwards and the sandbox's nodes set back to the dev stack's."""
    sandbox.up(stack_path("mixed"))  # already running: reconciles the kwok nodes with this stack's nodePools
    project.add_stack("mixed", stack_path("mixed"))
    project.run("mixed", "up")
    yield
    project.run("mixed", "destroy")
    sandbox.up(stack_path("dev"))


@pytest.fixture
def clean_jobs(cluster, mixed_stack):
    """Delete the Jobs of both namespaces after each test and wait until their Workloads are gone."""
    yield
    for ns in (INFERENCE_NS, TRAINING_NS):
        for job in cluster.batch.list_namespaced_job(ns).items:
            cluster.delete_job(job)
    for ns in (INFERENCE_NS, TRAINING_NS):
        wait_for(lambda ns=ns: not cluster.kueue_objects("workloads", ns), 90, f"Workloads in {ns} to be gone")


def _submit(cluster, namespace: str, name: str, queue: tuple[str, str], requests: Mapping[str, str],
            node_selector: Optional[Mapping[str, str]] = None) -> k8s.V1Job:
    """A one-pod batch/v1 Job for Kueue (queue-name and priority-class labels), optionally with a nodeSelector."""
    labels = {QUEUE_LABEL: queue[0], PRIORITY_LABEL: queue[1]}
    container = k8s.V1Container(
        name="main", image="registry.invalid/e2e:never-pulled", command=["sleep", "infinity"],
        resources=k8s.V1ResourceRequirements(requests=dict(requests), limits=dict(requests)))
    job = k8s.V1Job(
        metadata=k8s.V1ObjectMeta(name=name, namespace=namespace, labels=labels),
        spec=k8s.V1JobSpec(parallelism=1, completions=1, backoff_limit=0, template=k8s.V1PodTemplateSpec(
            metadata=k8s.V1ObjectMeta(labels=labels),
            spec=k8s.V1PodSpec(containers=[container], restart_policy="Never", termination_grace_period_seconds=0,
                               node_selector=dict(node_selector) if node_selector else None))))
    return cluster.batch.create_namespaced_job(namespace, job)


def _gpu_flavor(workload: Optional[Mapping]) -> Optional[str]:
    """The flavor Kueue assigned to the GPUs of an admitted Workload (status.admission.podSetAssignments[0])."""
    if not is_true(workload, "Admitted"):
        return None
    return workload["status"]["admission"]["podSetAssignments"][0]["flavors"].get(GPU)


def _admitted(cluster, job: k8s.V1Job, queue: str, flavor: str) -> dict:
    """Wait until `job`'s Workload is admitted in ClusterQueue `queue` with its GPUs in `flavor`; return it."""
    return wait_for(lambda: (w := cluster.workload_of(job)) and admitted_in(w) == queue and _gpu_flavor(w) == flavor
                    and w, 120, f"{job.metadata.name} admitted in {queue}, GPUs in flavor {flavor}")


def _borrowed_by_flavor(cluster, queue: str) -> dict[str, int]:
    cq = cluster.cluster_queue(queue)
    return {f["name"]: borrowed({"status": {"flavorsUsage": [f]}}, GPU)
            for f in (cq.get("status") or {}).get("flavorsUsage") or []}


def _node_of(cluster, job: k8s.V1Job) -> str:
    """Wait until the pod of `job` is bound by the kube-scheduler; return its node."""
    def bound() -> Optional[str]:
        pods = cluster.core.list_namespaced_pod(job.metadata.namespace,
                                                label_selector=f"job-name={job.metadata.name}").items
        return pods[0].spec.node_name if pods and pods[0].spec.node_name else None
    return wait_for(bound, 120, f"the pod of {job.metadata.name} to be scheduled")


def test_flavors_exist_in_declared_order_with_their_node_labels(cluster, mixed_stack):
    cq = cluster.cluster_queue("mixed-training-cq")
    assert [f["name"] for f in cq["spec"]["resourceGroups"][0]["flavors"]] == ["h100", "a100"]
    assert cq["spec"]["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}
    for name, product in (("h100", H100), ("a100", A100)):
        flavor = cluster.custom.get_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "resourceflavors", name)
        assert flavor["spec"]["nodeLabels"] == {PRODUCT: product}
    wait_for(lambda: all(is_true(cluster.cluster_queue(q), "Active")
                         for q in ("mixed-inference-cq", "mixed-training-cq")), 60, "both ClusterQueues Active")


def test_training_borrows_the_idle_a100_quota_while_inference_holds_h100(cluster, clean_jobs):
    serve = _submit(cluster, INFERENCE_NS, "serve", INFERENCE, TWO_GPUS)
    _admitted(cluster, serve, "mixed-inference-cq", "h100")  # the first flavor, in its own nominalQuota
    train = _submit(cluster, TRAINING_NS, "train", TRAINING, TWO_GPUS)
    _admitted(cluster, train, "mixed-training-cq", "a100")  # h100 is held: training borrows the idle a100 quota
    wait_for(lambda: _borrowed_by_flavor(cluster, "mixed-training-cq") == {"h100": 0, "a100": 2}, 30,
             "training to borrow 2 GPUs in a100 and none in h100")
    assert _node_of(cluster, train) == node_name("a100", 0)
    assert _node_of(cluster, serve) == node_name("h100", 0)
    assert admitted_in(cluster.workload_of(serve)) == "mixed-inference-cq"


def test_reclaim_in_one_flavor_evicts_only_the_training_that_borrowed_there(cluster, clean_jobs):
    on_h100 = _submit(cluster, TRAINING_NS, "train-h100", TRAINING, TWO_GPUS)
    _admitted(cluster, on_h100, "mixed-training-cq", "h100")
    on_a100 = _submit(cluster, TRAINING_NS, "train-a100", TRAINING, TWO_GPUS)
    _admitted(cluster, on_a100, "mixed-training-cq", "a100")

    serve = _submit(cluster, INFERENCE_NS, "serve-a100", INFERENCE, TWO_GPUS, {PRODUCT: A100})
    _admitted(cluster, serve, "mixed-inference-cq", "a100")
    evicted = wait_for(lambda: (w := cluster.workload_of(on_a100)) and is_true(w, "Preempted") and w, 60,
                       "the training Workload that borrowed in a100 to be preempted")
    assert condition(evicted, "Preempted")["reason"] == "InCohortReclamation"
    kept = cluster.workload_of(on_h100)
    assert _gpu_flavor(kept) == "h100" and not is_true(kept, "Preempted"), "training in h100 keeps running"
    wait_for(lambda: _borrowed_by_flavor(cluster, "mixed-training-cq") == {"h100": 2, "a100": 0}, 30,
             "training to borrow only in h100")


def test_a_node_selector_for_one_gpu_type_lands_only_in_its_flavor(cluster, clean_jobs):
    first = _submit(cluster, TRAINING_NS, "a100-only", TRAINING, TWO_GPUS, {PRODUCT: A100})
    _admitted(cluster, first, "mixed-training-cq", "a100")  # not h100, although h100 comes first and is idle
    assert _node_of(cluster, first) == node_name("a100", 0)

    second = _submit(cluster, TRAINING_NS, "a100-again", TRAINING, TWO_GPUS, {PRODUCT: A100})
    pending = wait_for(
        lambda: (w := cluster.workload_of(second)) and (c := condition(w, "QuotaReserved"))
        and c["status"] == "False" and "a100" in c.get("message", "") and w,
        90, "Kueue to refuse the second A100-only Workload for lack of a100 quota")
    assert not admitted_in(pending), "the idle h100 quota is not used by a workload that selects A100 nodes"
    assert "h100" in condition(pending, "QuotaReserved")["message"]  # h100 was considered and did not match
