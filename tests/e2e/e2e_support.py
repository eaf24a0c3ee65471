"""Helpers of the end-to-end suite: Jobs in Kueue's shape, Workload conditions (the Pulumi project copy is
deploy.scratch.Project).

Every assertion of the suite is made on real objects of the sandbox's kube-apiserver, written by the real Kueue
manager; waits poll the API until a condition holds (never a sleep whose length decides the outcome).
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Callable, Iterator, Mapping, TypeVar

import pytest
from kubernetes import client as k8s
from kubernetes.utils import parse_quantity

from kueue_cohorts.sandbox import cli
from kueue_cohorts.sandbox.cluster import Sandbox
from kueue_cohorts.sandbox.paths import STATE_DIR_ENV, SandboxPaths

REPO = Path(__file__).resolve().parents[2]
KUEUE = ("kueue.x-k8s.io", "v1beta2")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
T = TypeVar("T")
#: The whole GPU slice of the dev stack's node (HAMi-style resources; the inference nominalQuota's GPU part):
#: a training Job asking for it borrows everything, an inference Job asking for it fits in its nominalQuota.
SLICE = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "20",
         "nvidia.com/gpumem": "2048"}


def wait_for(fn: Callable[[], T], timeout: float, what: str, interval: float = 0.25) -> T:
    """Poll ``fn`` until it returns a truthy value and return it; fail (AssertionError) naming ``what`` after
    ``timeout`` seconds with the last value seen."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        last = fn()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last: {last!r}")
        time.sleep(interval)


@contextlib.contextmanager
def sandbox_in(root: Path) -> Iterator[Sandbox]:
    """Yield the Sandbox whose state dir is ``root``, with ``$KUEUE_COHORTS_SANDBOX_DIR`` pointed at ``root`` meanwhile
    (the inline Pulumi program, in this process, finds the sandbox's kubeconfig and webhook port there); on the way
    out the sandbox is stopped (``down``), then the variable is restored. Starts nothing: see ``start_sandbox``."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv(STATE_DIR_ENV, str(root))
        box = Sandbox(SandboxPaths(root))
        try:
            yield box
        finally:
            box.down()


def start_sandbox(box: Sandbox, *args: str) -> None:
    """Start ``box`` through the entry point of ``python -m kueue_cohorts.sandbox up --stack dev ARGS`` (the dev stack's
    nodePools); a sandbox that cannot start fails the test (pytest.fail, no traceback), it is never skipped."""
    argv = ["up", "--stack", "dev", *args]
    try:
        code = cli.main(argv)
    except Exception as exc:  # noqa: BLE001 - any failure to start is a failure of the test
        pytest.fail(f"the sandbox did not start: {exc}", pytrace=False)
    if code != 0:
        pytest.fail(f"`python -m kueue_cohorts.sandbox {' '.join(argv)}` exited {code}; logs in {box.paths.logs}",
                    pytrace=False)


class Cluster:
    """Typed access to the sandbox's API for the suite (kubernetes client APIs over one ApiClient)."""

    def __init__(self, api: k8s.ApiClient):
        self.api = api
        self.core = k8s.CoreV1Api(api)
        self.batch = k8s.BatchV1Api(api)
        self.custom = k8s.CustomObjectsApi(api)

    # --- Kueue objects --------------------------------------------------------------------------------------

    def cluster_queue(self, name: str) -> dict:
        """Return ClusterQueue ``name`` (kueue.x-k8s.io/v1beta2) as a dict."""
        return self.custom.get_cluster_custom_object(*KUEUE, "clusterqueues", name)

    def kueue_objects(self, plural: str, namespace: str | None = None) -> list[dict]:
        """List Kueue objects of ``plural`` (cluster-wide, or in ``namespace``)."""
        if namespace:
            return self.custom.list_namespaced_custom_object(*KUEUE, namespace, plural)["items"]
        return self.custom.list_cluster_custom_object(*KUEUE, plural)["items"]

    def workload_of(self, job: k8s.V1Job) -> dict | None:
        """Return the Workload Kueue made for ``job`` (label ``kueue.x-k8s.io/job-uid``), or None."""
        items = self.custom.list_namespaced_custom_object(
            *KUEUE, job.metadata.namespace, "workloads",
            label_selector=f"kueue.x-k8s.io/job-uid={job.metadata.uid}")["items"]
        return items[0] if items else None

    # --- Jobs -----------------------------------------------------------------------------------------------

    def submit_job(self, namespace: str, name: str, queue: str, requests: Mapping[str, str], *,
                   priority_class: str | None = None, parallelism: int = 1,
                   node_selector: Mapping[str, str] | None = None) -> k8s.V1Job:
        """Create a batch/v1 Job of ``parallelism`` Pods with ``requests`` (also as limits) and the pods' own
        ``node_selector`` when given, labelled for Kueue (queue-name, and priority-class when given), *not* suspended
        by us: Kueue's mutating webhook must do it. Returns the created Job as the API answered it."""
        labels = {QUEUE_LABEL: queue}
        if priority_class:
            labels[PRIORITY_LABEL] = priority_class
        container = k8s.V1Container(
            name="main", image="registry.invalid/e2e:never-pulled", command=["sleep", "infinity"],
            resources=k8s.V1ResourceRequirements(requests=dict(requests), limits=dict(requests)))
        job = k8s.V1Job(
            metadata=k8s.V1ObjectMeta(name=name, namespace=namespace, labels=labels),
            spec=k8s.V1JobSpec(
                parallelism=parallelism, completions=parallelism, backoff_limit=0,
                template=k8s.V1PodTemplateSpec(
                    metadata=k8s.V1ObjectMeta(labels=labels),
                    spec=k8s.V1PodSpec(containers=[container], restart_policy="Never",
                                       node_selector=dict(node_selector) if node_selector else None,
                                       termination_grace_period_seconds=0))))
        return self.batch.create_namespaced_job(namespace, job)

    def delete_job(self, job: k8s.V1Job) -> None:
        """Delete ``job`` and its Pods (foreground propagation) and wait until the Job is gone."""
        self.batch.delete_namespaced_job(job.metadata.name, job.metadata.namespace,
                                         body=k8s.V1DeleteOptions(propagation_policy="Foreground"))

        def gone() -> bool:
            try:
                self.batch.read_namespaced_job(job.metadata.name, job.metadata.namespace)
            except k8s.ApiException as exc:
                return exc.status == 404
            return False

        wait_for(gone, 60, f"Job {job.metadata.namespace}/{job.metadata.name} to be deleted")

    def read_job(self, job: k8s.V1Job) -> k8s.V1Job:
        """Re-read ``job``."""
        return self.batch.read_namespaced_job(job.metadata.name, job.metadata.namespace)

    def ensure_namespace(self, name: str, labels: Mapping[str, str] | None = None) -> None:
        """Create namespace ``name`` with ``labels`` unless it exists."""
        try:
            self.core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name, labels=dict(labels or {}))))
        except k8s.ApiException as exc:
            if exc.status != 409:
                raise


def condition(workload: Mapping | None, kind: str) -> dict | None:
    """Return condition ``kind`` (e.g. "Admitted") of a Workload dict, or None."""
    for cond in ((workload or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == kind:
            return cond
    return None


def is_true(workload: Mapping | None, kind: str) -> bool:
    """Return True when condition ``kind`` of the Workload is status "True"."""
    cond = condition(workload, kind)
    return bool(cond and cond["status"] == "True")


def admitted_in(workload: Mapping | None) -> str | None:
    """Return the ClusterQueue a Workload is admitted in (``status.admission.clusterQueue``) when Admitted=True."""
    if not is_true(workload, "Admitted"):
        return None
    return ((workload.get("status") or {}).get("admission") or {}).get("clusterQueue")


def borrowed(cq: Mapping, resource: str) -> int:
    """Return how much of ``resource`` ClusterQueue ``cq`` borrows now, summed over flavors (status.flavorsUsage)."""
    return _usage(cq, resource, "borrowed")


def used(cq: Mapping, resource: str) -> int:
    """Return how much of ``resource`` ClusterQueue ``cq`` uses now (status.flavorsUsage[].resources[].total)."""
    return _usage(cq, resource, "total")


def _usage(cq: Mapping, resource: str, field: str) -> int:
    """Sum ``status.flavorsUsage[].resources[<resource>].<field>`` of ClusterQueue ``cq`` over its flavors."""
    total = 0
    for flavor in (cq.get("status") or {}).get("flavorsUsage") or []:
        for res in flavor.get("resources") or []:
            if res["name"] == resource:
                total += parse_quantity(res.get(field, "0"))
    return int(total)


def assert_outside_namespace_gets_nothing(cluster: Cluster, namespace: str, labels: Mapping[str, str]) -> None:
    """The inference ClusterQueue c12-inference-cq of the dev stack admits nothing from a namespace it does not
    declare: ``namespace`` is created with ``labels`` (deleted afterwards) and given a LocalQueue pointing at
    c12-inference-cq; its Job's Workload is refused for its namespace (QuotaReserved False), while a Job of the
    declared c12-inference is admitted, and stays unadmitted even so, with free quota. AssertionError otherwise."""
    cluster.ensure_namespace(namespace, labels)
    cluster.custom.create_namespaced_custom_object(*KUEUE, namespace, "localqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": "outsider-lq", "namespace": namespace}, "spec": {"clusterQueue": "c12-inference-cq"}})
    try:
        outsider = cluster.submit_job(namespace, "outsider", "outsider-lq", SLICE, priority_class="c12-inference-prio")
        refused = wait_for(
            lambda: (w := cluster.workload_of(outsider)) and (c := condition(w, "QuotaReserved"))
            and c["status"] == "False" and "namespace" in c.get("message", "").lower() and w,
            90, f"Kueue to refuse the Workload of {namespace} for its namespace")
        assert not admitted_in(refused)
        legit = cluster.submit_job("c12-inference", "serve", "c12-inference-lq", SLICE,
                                   priority_class="c12-inference-prio")
        wait_for(lambda: admitted_in(cluster.workload_of(legit)) == "c12-inference-cq", 90,
                 "the declared namespace's Workload to be admitted")
        assert not admitted_in(cluster.workload_of(outsider)), f"free inference quota still does not reach {namespace}"
    finally:
        cluster.core.delete_namespace(namespace)


TRAINER = ("trainer.kubeflow.org", "v1alpha1")


def delete_trainjob_and_deployment(cluster: Cluster, trainjob: str, training_ns: str, deployment: str,
                                   inference_ns: str, timeout: float) -> None:
    """Delete the TrainJob ``trainjob`` of ``training_ns`` and the Deployment ``deployment`` of ``inference_ns`` (either
    may be gone already: 404 is fine), then wait up to ``timeout`` seconds, each, until neither namespace has a
    Workload left. The cleanup of a test that borrowed quota with a TrainJob and reclaimed it with a Deployment; the
    caller waits for whatever else it made (its JobSet, its pods). Raises kubernetes ApiException on any other
    status, AssertionError (wait_for) on a timeout."""
    apps = k8s.AppsV1Api(cluster.api)
    for delete in (lambda: cluster.custom.delete_namespaced_custom_object(*TRAINER, training_ns, "trainjobs", trainjob),
                   lambda: apps.delete_namespaced_deployment(deployment, inference_ns)):
        try:
            delete()
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
    for ns in (training_ns, inference_ns):
        wait_for(lambda ns=ns: not cluster.kueue_objects("workloads", ns), timeout, f"Workloads in {ns} to be gone")
