"""Topology-Aware Scheduling (TAS) off vs on: does Kueue v0.19.2 stop the placement harms of issue 37, and at what cost.

Run: ``.venv/bin/python -m kueue_cohorts.benchmarks.tas [--jobs 50] [--rounds 3] [--running] [--write]`` (a sandbox of
its own in a
scratch directory, up with the dev stack's nodes, which take no part; ``--running``: the sandbox ``kueue-cohorts
sandbox up`` started). Prints the figures; rewrites ``benchmarks/results/tas.json`` only with ``--write``, with the
machine's load average (1, 5, 15 min) before and after.

"On" means implicit TAS as Kueue v0.19.2 defines it: one ``Topology`` (``kueue.x-k8s.io/v1beta2``) with the single
level ``kubernetes.io/hostname``, named by ``spec.topologyName`` of every ResourceFlavor of the ClusterQueue
(``keps/2724-topology-aware-scheduling/README.md`` "Implicit defaulting of TAS annotations"). Feature gate
``TopologyAwareScheduling`` is Beta and on by default since 0.14 (``pkg/features/kube_features.go``), so the
sandbox's Kueue Configuration needs nothing more. A flavor without ``nodeLabels`` cannot name a Topology (CEL rule
"at least one nodeLabel is required when topology is set", ``apis/kueue/v1beta2/resourceflavor_types.go``), so such
a flavor stays off in both modes.

1. Harm scenarios (:func:`scenarios`), each on kwok nodes, flavors and queues of its own, once per mode: the inference
   workloads are Deployments (the pod integration, the kind inference runs as) submitted one after the other; each
   gets a verdict (:func:`verdict`): ``admitted-running``, ``admitted-pending`` (Kueue admitted, the kube-scheduler
   has no node: the harm), or ``not-admitted`` (with Kueue's message) after :data:`VERDICT_WAIT_S`.
2. Admission latency: ``--jobs`` one-GPU batch/v1 Jobs submitted at once to a ClusterQueue whose quota and kwok nodes
   hold them all, per round and mode (alternating off/on): seconds from each Job's create request to its Workload's
   ``Admitted=True`` and to its pod Running (polled every :data:`POLL_S`), and the Kueue manager's CPU seconds
   (utime+stime of ``/proc/<pid>/stat``) over the round; the ratios on/off of the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from kubernetes import client as k8s
from kubernetes import config as kconfig

from kueue_cohorts.benchmarks import load_average, save, summary, utc_now
from kueue_cohorts.benchmarks.sandbox import scratch_dirs
from kueue_cohorts.components.settings.stackfile import stack_path
from kueue_cohorts.policy.rules.vocabulary.objects import QUEUE_NAME_LABEL
from kueue_cohorts.sandbox import kwok
from kueue_cohorts.sandbox.apply import request_json
from kueue_cohorts.sandbox.cluster import Sandbox
from kueue_cohorts.sandbox.paths import SandboxPaths

GPU = "nvidia.com/gpu"
HOSTNAME = "kubernetes.io/hostname"
KUEUE_API = "/apis/kueue.x-k8s.io/v1beta2"
#: Label (on nodes and in flavors' nodeLabels) and taint key (on nodes, tolerated by flavors and pods) that keep each
#: scenario of each mode on kwok nodes of its own; the value is the scope (``tas-<mode>-<scenario>``).
SCOPE_KEY = "kueue-cohorts/tas-bench"
#: The label every object of this benchmark carries, for the final clean-up.
BENCH_LABEL = ("kueue-cohorts/bench", "tas")
MODES = ("off", "on")
VERDICT_WAIT_S = 20.0
"""Seconds a workload is given before it is judged not admitted (Kueue admits a fitting one within about a second
on the sandbox; the kube-scheduler marks an unplaceable pod Unschedulable within seconds of its ungating)."""
POLL_S = 0.1
"""Seconds between two polls of Workloads and Pods in the latency measurement (its resolution)."""
#: Where Kueue v0.19.2 decides TAS coverage, per job kind (read from sigs.k8s.io/kueue@v0.19.2).
COVERAGE: dict[str, dict[str, str]] = {
    "batch/Job": {"tas": "yes",
                  "source": "pkg/controller/jobs/job/job_controller.go PodSets (NewPodSetTopologyRequest)"},
    "JobSet": {"tas": "yes", "source": "pkg/controller/jobs/jobset/jobset_controller.go PodSets"},
    "TrainJob (Kubeflow Trainer v2)": {
        "tas": "yes", "source": "pkg/controller/jobs/trainjob/trainjob_controller.go podSets: the child JobSet's "
        "PodSets; RunWithPodSetsInfo patches the scheduling gate into the runtime; trainjob_webhook.go validates "
        "the TAS annotations"},
    "Pod / Deployment / StatefulSet (pod integration)": {
        "tas": "yes", "source": "pkg/controller/jobs/pod/pod_webhook.go gates every suspended pod with "
        "kueue.x-k8s.io/topology when the gate is on; pod_controller.go constructPodSets; the deployment and "
        "statefulset integrations hand their pods to it"},
    "LeaderWorkerSet": {"tas": "yes", "source": "pkg/controller/jobs/leaderworkerset/leaderworkerset_reconciler.go"},
    "MPIJob, Kubeflow v1 jobs, RayJob/RayCluster, SparkApplication, AppWrapper": {
        "tas": "yes", "source": "each PodSets calls jobframework.NewPodSetTopologyRequest"},
    "elastic jobs (workload slices)": {
        "tas": "no by default", "source": "gate ElasticJobsViaWorkloadSlicesWithTAS: Alpha, off "
        "(pkg/features/kube_features.go)"},
    "MultiKueue manager": {
        "tas": "deferred", "source": "pkg/scheduler/flavorassigner/tas_flavorassigner.go: TAS is delayed on the "
        "manager, the topology is assigned on the worker cluster"},
    "pods Kueue does not manage": {
        "tas": "counted, not queued", "source": "pkg/controller/tas/non_tas_usage_controller.go "
        "belongsToNonTASCache: every bound, non-terminated pod without a TAS annotation is subtracted from its "
        "node's capacity"},
}


# --- what each scenario is (pure) ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Nodes:
    """``count`` kwok nodes named ``<scope>-<suffix>-<i>``, each with ``gpus`` GPUs, ``cpu`` cores and ``memory``
    (a quantity), labelled :data:`SCOPE_KEY` = scope plus ``pool`` = ``<scope>-<pool>`` when ``pool`` is set."""

    suffix: str
    count: int
    gpus: int
    pool: str = ""
    cpu: int = 16
    memory: str = "64Gi"


@dataclass(frozen=True)
class Flavor:
    """A ResourceFlavor ``<scope>-<name>``; ``pool``: its nodeLabels add ``pool`` = ``<scope>-<pool>``; ``labelled``
    False: no nodeLabels at all (it then selects every node it tolerates and cannot name a Topology)."""

    name: str
    pool: str = ""
    labelled: bool = True


@dataclass(frozen=True)
class Queue:
    """A ClusterQueue ``<scope>-<name>`` (no cohort) with ``gpus`` GPUs of ``flavor`` (and 4 cpu, 16Gi per GPU),
    and LocalQueue ``<name>`` in namespace ``<scope>``."""

    name: str
    flavor: str
    gpus: int


@dataclass(frozen=True)
class Work:
    """A Deployment ``name`` of one replica asking ``gpus`` GPUs (1 cpu, 1Gi) on LocalQueue ``queue`` (None: no
    queue label, a pod Kueue never sees), tolerating the scope's taint and selecting the scope's nodes; ``pool``:
    also ``pool`` = ``<scope>-<pool>`` (where the adversary puts a pod the scheduler may put there)."""

    name: str
    queue: Optional[str]
    gpus: int
    pool: str = ""


@dataclass(frozen=True)
class Scenario:
    """One harm of issue 37 (``harm``: its class 1-3): ``nodes``, ``flavors``, ``queues``; ``before``: workloads run
    first, until Running; ``inference``: the inference Deployments, submitted one after the other, each judged;
    ``expected``: mode -> the verdict expected per inference workload (from reading Kueue v0.19.2, see ``why``)."""

    name: str
    harm: int
    description: str
    nodes: tuple[Nodes, ...]
    flavors: tuple[Flavor, ...]
    queues: tuple[Queue, ...]
    before: tuple[Work, ...]
    inference: tuple[Work, ...]
    expected: Mapping[str, Mapping[str, str]]
    why: str


def scenarios() -> list[Scenario]:
    """The harm scenarios of issue 37 classes 1-3 (tests/e2e/test_11_inference_rollout.py's wide pod,
    test_15_cohorts_status_and_verify.py's unqueued GPU Job, test_29_fuzzer.py's flavor overlap), each small enough
    to read: see each ``description``."""
    return [
        Scenario(
            "pod-wider-than-node", 1,
            "two nodes of 2 GPUs, inference quota 4 GPUs; a 4-GPU pod, then a 2-GPU pod",
            (Nodes("n", 2, 2),), (Flavor("gpu"),), (Queue("inference", "gpu", 4),), (),
            (Work("wide", "inference", 4), Work("fits", "inference", 2)),
            {"off": {"wide": "admitted-pending", "fits": "not-admitted"},
             "on": {"wide": "not-admitted", "fits": "admitted-running"}},
            "off: quota is a sum, the wide pod holds all 4 GPUs of quota and no node; on: TAS finds no node for 4 "
            "GPUs (flavorassigner.go: quota Fit, TAS failure -> Preempt mode, nothing to preempt)"),
        Scenario(
            "flavor-overlap", 2,
            "node A (2 GPUs) of inference's flavor; another queue's flavor selects nodes A and B, its 2-GPU pod "
            "lands on A; then inference asks its 2 GPUs",
            (Nodes("a", 1, 2, pool="a"), Nodes("b", 1, 2, pool="b")), (Flavor("inf", pool="a"), Flavor("other")),
            (Queue("inference", "inf", 2), Queue("other", "other", 2)), (Work("squatter", "other", 2, pool="a"),),
            (Work("serve", "inference", 2),),
            {"off": {"serve": "admitted-pending"}, "on": {"serve": "not-admitted"}},
            "both flavors name the Topology: the squatter is a TAS pod of the other flavor; gate "
            "TASHandleOverlappingFlavors (Beta, on since 0.18, kueue#10659) adds every flavor's TAS usage of a node "
            "to each flavor's snapshot when the lowest level is the node (pkg/cache/scheduler/snapshot.go, "
            "clusterqueue_snapshot.go)"),
        Scenario(
            "flavor-without-nodelabels", 2,
            "as flavor-overlap, but the other flavor has no nodeLabels (it selects every node; it cannot name a "
            "Topology, so its queue stays without TAS in both modes)",
            (Nodes("a", 1, 2, pool="a"), Nodes("b", 1, 2, pool="b")),
            (Flavor("inf", pool="a"), Flavor("other", labelled=False)),
            (Queue("inference", "inf", 2), Queue("other", "other", 2)), (Work("squatter", "other", 2, pool="a"),),
            (Work("serve", "inference", 2),),
            {"off": {"serve": "admitted-pending"}, "on": {"serve": "not-admitted"}},
            "the squatter is a non-TAS pod, subtracted from node A's capacity by the TAS cache"),
        Scenario(
            "unqueued-gpu-pod", 3,
            "one node of 1 GPU, inference quota 1 GPU; a pod without queue label takes the GPU; then inference asks "
            "for 1 GPU",
            (Nodes("n", 1, 1),), (Flavor("gpu"),), (Queue("inference", "gpu", 1),), (Work("unqueued", None, 1),),
            (Work("serve", "inference", 1),),
            {"off": {"serve": "admitted-pending"}, "on": {"serve": "not-admitted"}},
            "the unqueued pod is a non-TAS pod, subtracted from the node's capacity by the TAS cache"),
    ]


def scope(mode: str, name: str) -> str:
    """The scope of scenario (or measurement) ``name`` in ``mode``: ``tas-<mode>-<name>``, the namespace and the
    prefix of every object of it."""
    return f"tas-{mode}-{name}"


def topology_manifest(name: str) -> dict[str, Any]:
    """A ``kueue.x-k8s.io/v1beta2`` Topology ``name`` with the single level ``kubernetes.io/hostname`` (the lowest
    level, where ``apis/kueue/v1beta2/topology_types.go`` requires the hostname label to be)."""
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
            "metadata": {"name": name, "labels": dict([BENCH_LABEL])},
            "spec": {"levels": [{"nodeLabel": HOSTNAME}]}}


def _labels(where: str, pool: str) -> dict[str, str]:
    return {SCOPE_KEY: where, **({"pool": f"{where}-{pool}"} if pool else {})}


def _taint(where: str) -> dict[str, str]:
    return {"key": SCOPE_KEY, "value": where, "effect": "NoSchedule"}


def _toleration(where: str) -> dict[str, str]:
    return {**_taint(where), "operator": "Equal"}


def node_manifests(where: str, nodes: Sequence[Nodes]) -> list[dict[str, Any]]:
    """The kwok Nodes of ``nodes`` in scope ``where``: labelled (see :class:`Nodes`) and tainted with the scope's
    taint, shaped as ``sandbox.kwok.node_manifests`` shapes a stack's pools (kwok's label and annotation,
    ``kubernetes.io/hostname``, capacity = allocatable)."""
    out = []
    for group in nodes:
        capacity = {"pods": "110", "cpu": str(group.cpu), "memory": group.memory, GPU: str(group.gpus)}
        for i in range(group.count):
            name = f"{where}-{group.suffix}-{i}"
            out.append({"apiVersion": "v1", "kind": "Node", "metadata": {
                "name": name, "annotations": {kwok.NODE_ANNOTATION[0]: kwok.NODE_ANNOTATION[1]},
                "labels": {**_labels(where, group.pool), kwok.NODE_LABEL[0]: kwok.NODE_LABEL[1], HOSTNAME: name,
                           BENCH_LABEL[0]: BENCH_LABEL[1]}},
                "spec": {"taints": [_taint(where)]},
                "status": {"capacity": capacity, "allocatable": dict(capacity)}})
    return out


def flavor_manifest(where: str, flavor: Flavor, topology: Optional[str]) -> dict[str, Any]:
    """ResourceFlavor ``<where>-<name>`` tolerating the scope's taint (Kueue adds a flavor's tolerations to the pods
    it admits); its nodeLabels select the scope (and pool) unless ``flavor.labelled`` is False; ``topologyName`` =
    ``topology`` when given and the flavor is labelled (Kueue's CEL rule refuses a Topology without nodeLabels)."""
    spec: dict[str, Any] = {"tolerations": [_toleration(where)]}
    if flavor.labelled:
        spec["nodeLabels"] = _labels(where, flavor.pool)
        if topology:
            spec["topologyName"] = topology
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": f"{where}-{flavor.name}", "labels": dict([BENCH_LABEL])}, "spec": spec}


def queue_manifests(where: str, queue: Queue) -> list[dict[str, Any]]:
    """The ClusterQueue ``<where>-<name>`` (``queue.gpus`` GPUs of its flavor, 4 cpu and 16Gi per GPU, no cohort)
    and its LocalQueue ``<name>`` in namespace ``where``."""
    quota = [{"name": "cpu", "nominalQuota": str(4 * queue.gpus)},
             {"name": "memory", "nominalQuota": f"{16 * queue.gpus}Gi"},
             {"name": GPU, "nominalQuota": str(queue.gpus)}]
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
          "metadata": {"name": f"{where}-{queue.name}", "labels": dict([BENCH_LABEL])},
          "spec": {"namespaceSelector": {}, "resourceGroups": [{
              "coveredResources": ["cpu", "memory", GPU],
              "flavors": [{"name": f"{where}-{queue.flavor}", "resources": quota}]}]}}
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
          "metadata": {"name": queue.name, "namespace": where, "labels": dict([BENCH_LABEL])},
          "spec": {"clusterQueue": f"{where}-{queue.name}"}}
    return [cq, lq]


def _pod_spec(where: str, gpus: int, pool: str, grace: int = 0) -> dict[str, Any]:
    requests = {"cpu": "1", "memory": "1Gi", GPU: str(gpus)}
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": grace, "tolerations": [_toleration(where)],
        "containers": [{"name": "main", "image": "registry.invalid/tas-bench:never-pulled",
                        "resources": {"requests": requests, "limits": dict(requests)}}]}
    spec["nodeSelector"] = _labels(where, pool)
    return spec


def deployment_manifest(where: str, work: Work) -> dict[str, Any]:
    """The apps/v1 Deployment of ``work`` in namespace ``where`` (see :class:`Work`); its pod template carries the
    queue-name label (Kueue's pod integration reads it there) and ``app: <name>``."""
    labels = {"app": work.name, **({QUEUE_NAME_LABEL: work.queue} if work.queue else {})}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": work.name, "namespace": where, "labels": dict([BENCH_LABEL])},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": work.name}},
                     "template": {"metadata": {"labels": labels}, "spec": _pod_spec(where, work.gpus, work.pool)}}}


def job_manifest(where: str, name: str, queue: str) -> dict[str, Any]:
    """A batch/v1 Job ``name`` of one 1-GPU pod (1 cpu, 1Gi) on LocalQueue ``queue`` in namespace ``where``."""
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": where, "labels": {QUEUE_NAME_LABEL: queue, BENCH_LABEL[0]:
                                                                          BENCH_LABEL[1]}},
            "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0, "template": {
                "metadata": {"labels": {QUEUE_NAME_LABEL: queue}},
                "spec": {"restartPolicy": "Never", **_pod_spec(where, 1, "")}}}}


def verdict(workload: Optional[Mapping[str, Any]], pod: Optional[Mapping[str, Any]]) -> str:
    """The verdict on one inference workload from its Kueue Workload and its Pod (either None when absent):
    ``admitted-running`` (Workload Admitted, Pod Running), ``admitted-pending`` (Admitted, Pod not Running: gated
    by TAS, or refused by the kube-scheduler), or ``not-admitted``."""
    if workload is None or not condition(workload, "Admitted").get("status") == "True":
        return "not-admitted"
    if pod is not None and (pod.get("status") or {}).get("phase") == "Running":
        return "admitted-running"
    return "admitted-pending"


def condition(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The status condition of type ``kind`` of ``obj`` (a Workload or Pod as JSON), {} when it has none."""
    found: dict[str, Any] = next((c for c in (obj.get("status") or {}).get("conditions") or []
                                  if c.get("type") == kind), {})
    return found


def cpu_seconds(stat: str, ticks_per_second: int) -> float:
    """utime + stime of a ``/proc/<pid>/stat`` line ``stat`` (proc(5) fields 14 and 15, counted after the
    parenthesised command name, which may hold spaces), in seconds given the kernel's ``SC_CLK_TCK``."""
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks_per_second


def percentiles(samples: Sequence[float]) -> dict[str, float]:
    """``{"p50", "p95", "max"}`` of ``samples`` (seconds; nearest-rank p95), each rounded to 0.001. Raises
    ValueError when ``samples`` is empty."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered), max(1, -(-95 * len(ordered) // 100))) - 1]
    return {"p50": round(statistics.median(ordered), 3), "p95": round(p95, 3), "max": round(ordered[-1], 3)}


def ratio(on: float, off: float) -> Optional[float]:
    """``on / off`` rounded to 0.01, None when ``off`` is 0."""
    return round(on / off, 2) if off else None


# --- the sandbox side ----------------------------------------------------------------------------------------


def kueue_pid(root: Path) -> Optional[int]:
    """The pid of the Kueue manager of the sandbox whose state dir is ``root``: the process whose argv[0] is a
    ``kueue`` binary and whose ``--config=`` is ``root/config/kueue.yaml`` (``sandbox.cluster`` starts it so).
    None when not found."""
    wanted = f"--config={root / 'config' / 'kueue.yaml'}"
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and Path(argv[0].decode(errors="replace")).name == "kueue" and wanted.encode() in argv:
            return int(entry.name)
    return None


class Bench:
    """Runs the scenarios and the latency rounds on the sandbox behind ``api`` (an admin ApiClient); ``pid``: the
    Kueue manager's (None: CPU seconds not reported). Every object it makes carries :data:`BENCH_LABEL`."""

    def __init__(self, api: k8s.ApiClient, pid: Optional[int], clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.api, self.pid, self.clock, self.sleep = api, pid, clock, sleep
        self.tick = os.sysconf("SC_CLK_TCK")
        self.made: list[str] = []  # object paths, in creation order

    # --- objects ---

    def _path(self, obj: Mapping[str, Any]) -> str:
        kind, meta = obj["kind"], obj["metadata"]
        paths = {"Namespace": "/api/v1/namespaces", "Node": "/api/v1/nodes",
                 "Topology": f"{KUEUE_API}/topologies", "ResourceFlavor": f"{KUEUE_API}/resourceflavors",
                 "ClusterQueue": f"{KUEUE_API}/clusterqueues",
                 "LocalQueue": f"{KUEUE_API}/namespaces/{meta.get('namespace')}/localqueues",
                 "Deployment": f"/apis/apps/v1/namespaces/{meta.get('namespace')}/deployments",
                 "Job": f"/apis/batch/v1/namespaces/{meta.get('namespace')}/jobs"}
        return f"{paths[kind]}/{meta['name']}"

    def apply(self, obj: Mapping[str, Any]) -> None:
        """Server-side apply ``obj`` (and its ``status``, for a kwok Node); remembered for :meth:`clean`."""
        path = self._path(obj)
        query = [("fieldManager", "kueue-cohorts-tas-bench"), ("force", "true")]
        request_json(self.api, "PATCH", path, body={k: v for k, v in obj.items() if k != "status"}, query=query,
                     content_type="application/apply-patch+yaml")
        if obj.get("status"):
            request_json(self.api, "PATCH", f"{path}/status", query=query, content_type="application/apply-patch+yaml",
                         body={"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                               "metadata": {"name": obj["metadata"]["name"]}, "status": obj["status"]})
        if obj["kind"] not in ("Deployment", "Job"):
            self.made.append(path)

    def clean(self) -> None:
        """Delete what was made, newest first: each namespace's pods at once (grace 0), then the objects."""
        for path in [p for p in self.made if p.startswith("/api/v1/namespaces/")]:
            ns = path.rsplit("/", 1)[1]
            for collection in (f"/apis/apps/v1/namespaces/{ns}/deployments", f"/apis/batch/v1/namespaces/{ns}/jobs"):
                request_json(self.api, "DELETE", collection, query=[("propagationPolicy", "Background")])
            request_json(self.api, "DELETE", f"/api/v1/namespaces/{ns}/pods", query=[("gracePeriodSeconds", "0")])
        for path in reversed(self.made):
            try:
                request_json(self.api, "DELETE", path)
            except k8s.ApiException as exc:
                if exc.status != 404:
                    raise
        self.made = []

    def _list(self, path: str, query: Optional[list[tuple[str, str]]] = None) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = request_json(self.api, "GET", path, query=query).get("items") or []
        return items

    def cpu(self) -> Optional[float]:
        """The Kueue manager's CPU seconds so far (utime + stime), None when its pid is unknown or gone."""
        if self.pid is None:
            return None
        try:
            return cpu_seconds(Path(f"/proc/{self.pid}/stat").read_text(), self.tick)
        except OSError:
            return None

    def rss_mib(self) -> Optional[float]:
        """The Kueue manager's resident memory (``VmRSS`` of ``/proc/<pid>/status``) in MiB, None when unknown."""
        if self.pid is None:
            return None
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
        except OSError:
            return None
        return None

    def setup(self, where: str, mode: str, nodes: Sequence[Nodes], flavors: Sequence[Flavor],
              queues: Sequence[Queue]) -> None:
        """Namespace ``where``, its kwok nodes, the Topology (mode ``on``), flavors and queues; waits until every
        ClusterQueue is Active (a TAS flavor's queue becomes Active once Kueue has read its Topology)."""
        topology = f"{where}-hostname" if mode == "on" else None
        self.apply({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": where, "labels": dict([BENCH_LABEL])}})
        for node in node_manifests(where, nodes):
            self.apply(node)
        if topology:
            self.apply(topology_manifest(topology))
        for flavor in flavors:
            self.apply(flavor_manifest(where, flavor, topology))
        for queue in queues:
            for obj in queue_manifests(where, queue):
                self.apply(obj)
        deadline = self.clock() + 60
        while self.clock() < deadline:
            cqs = [request_json(self.api, "GET", f"{KUEUE_API}/clusterqueues/{where}-{q.name}") for q in queues]
            if all(condition(cq, "Active").get("status") == "True" for cq in cqs):
                return
            self.sleep(0.2)
        raise TimeoutError(f"ClusterQueues of {where} not Active within 60 s")

    # --- the harm scenarios ---

    def _pod_of(self, where: str, app: str) -> Optional[dict[str, Any]]:
        pods = [p for p in self._list(f"/api/v1/namespaces/{where}/pods", [("labelSelector", f"app={app}")])
                if not (p.get("metadata") or {}).get("deletionTimestamp")]
        return pods[0] if pods else None

    def _workload_of(self, where: str, pod: Optional[Mapping[str, Any]]) -> Optional[dict[str, Any]]:
        if pod is None:
            return None
        name = pod["metadata"]["name"]
        for wl in self._list(f"{KUEUE_API}/namespaces/{where}/workloads"):
            if any(ref.get("name") == name for ref in (wl.get("metadata") or {}).get("ownerReferences") or []):
                return wl
        return None

    def judge(self, where: str, app: str) -> dict[str, Any]:
        """Wait up to :data:`VERDICT_WAIT_S` for Deployment ``app``'s pod to run or be refused by the
        kube-scheduler; return its verdict, the seconds it took, Kueue's message for a Workload not admitted, and
        the pod's PodScheduled reason and message."""
        start = self.clock()
        while True:
            pod = self._pod_of(where, app)
            wl = self._workload_of(where, pod)
            found = verdict(wl, pod)
            scheduled = condition(pod or {}, "PodScheduled")
            refused = scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable"
            if found == "admitted-running" or (found == "admitted-pending" and refused):
                break
            if self.clock() - start > VERDICT_WAIT_S:
                break
            self.sleep(0.25)
        out: dict[str, Any] = {"verdict": found, "seconds": round(self.clock() - start, 1)}
        if found == "not-admitted" and wl is not None:
            reserved = condition(wl, "QuotaReserved")
            out["kueue"] = f"{reserved.get('reason')}: {reserved.get('message')}"
        if found == "admitted-pending" and pod is not None:
            gates = [g.get("name") for g in (pod.get("spec") or {}).get("schedulingGates") or []]
            out["pod"] = (f"{scheduled.get('reason')}: {scheduled.get('message')}" if scheduled.get("reason")
                          else f"gated {gates}")
        return out

    def scenario(self, sc: Scenario, mode: str) -> dict[str, Any]:
        """Run ``sc`` in ``mode`` and clean up; returns the verdict per inference workload next to the expected
        one, and whether all matched."""
        where = scope(mode, sc.name)
        try:
            self.setup(where, mode, sc.nodes, sc.flavors, sc.queues)
            before: dict[str, str] = {}
            for work in sc.before:
                self.apply(deployment_manifest(where, work))
            for work in sc.before:
                deadline = self.clock() + 60
                while self.clock() < deadline:
                    pod = self._pod_of(where, work.name)
                    if pod is not None and (pod.get("status") or {}).get("phase") == "Running":
                        break
                    self.sleep(0.25)
                before[work.name] = (f"Running on {pod['spec'].get('nodeName')}" if pod is not None and
                                     (pod.get("status") or {}).get("phase") == "Running" else "not Running")
            got: dict[str, Any] = {}
            for work in sc.inference:
                self.apply(deployment_manifest(where, work))
                got[work.name] = self.judge(where, work.name)
            expected = dict(sc.expected[mode])
            return {"before": before, "inference": got, "expected": expected,
                    "as_expected": all(got[k]["verdict"] == v for k, v in expected.items())}
        finally:
            self.clean()

    # --- admission latency ---

    def latency_round(self, where: str, jobs: int, tag: str = "r0") -> dict[str, Any]:
        """Submit ``jobs`` one-GPU Jobs ``<tag>-jNNN`` to LocalQueue ``bulk`` of ``where`` (set up already) and poll
        until every Workload is Admitted and every pod Running (at most 180 s). Returns admission and running
        seconds (:func:`percentiles`, from each Job's create request; ``all_*``: from the first request to the last),
        the Kueue manager's CPU seconds over the round and the load average before and after; the Jobs and pods
        are deleted after."""
        load_before, cpu_before = load_average(), self.cpu()
        created: dict[str, float] = {}
        start = self.clock()
        for i in range(jobs):
            name = f"{tag}-j{i:03d}"
            request_json(self.api, "POST", f"/apis/batch/v1/namespaces/{where}/jobs",
                         body=job_manifest(where, name, "bulk"))
            created[name] = self.clock()
        admitted: dict[str, float] = {}
        running: dict[str, float] = {}
        deadline = start + 180
        while (len(admitted) < jobs or len(running) < jobs) and self.clock() < deadline:
            now = self.clock()
            for wl in self._list(f"{KUEUE_API}/namespaces/{where}/workloads"):
                refs = (wl.get("metadata") or {}).get("ownerReferences") or []
                job = str(refs[0].get("name")) if refs else ""
                if job in created and job not in admitted and condition(wl, "Admitted").get("status") == "True":
                    admitted[job] = now - created[job]
            for pod in self._list(f"/api/v1/namespaces/{where}/pods"):
                job = str(((pod.get("metadata") or {}).get("labels") or {}).get("batch.kubernetes.io/job-name", ""))
                if job in created and job not in running and (pod.get("status") or {}).get("phase") == "Running":
                    running[job] = now - created[job]
            self.sleep(POLL_S)
        cpu_after, load_after = self.cpu(), load_average()
        if len(admitted) < jobs or len(running) < jobs:
            raise TimeoutError(f"{where}: {len(admitted)}/{jobs} admitted, {len(running)}/{jobs} running in 180 s")
        first = min(created.values())
        out = {"admitted_s": percentiles(list(admitted.values())), "running_s": percentiles(list(running.values())),
               "all_admitted_s": round(max(created[j] + t for j, t in admitted.items()) - first, 3),
               "all_running_s": round(max(created[j] + t for j, t in running.items()) - first, 3),
               "kueue_cpu_s": (round(cpu_after - cpu_before, 2) if cpu_after is not None and cpu_before is not None
                               else None),
               "load_before": load_before, "load_after": load_after}
        request_json(self.api, "DELETE", f"/apis/batch/v1/namespaces/{where}/jobs",
                     query=[("propagationPolicy", "Background")])
        request_json(self.api, "DELETE", f"/api/v1/namespaces/{where}/pods", query=[("gracePeriodSeconds", "0")])
        deadline = self.clock() + 60
        while self.clock() < deadline and (self._list(f"{KUEUE_API}/namespaces/{where}/workloads")
                                           or self._list(f"/api/v1/namespaces/{where}/pods")):
            self.sleep(0.5)
        return out

    def latency(self, jobs: int, rounds: int) -> dict[str, Any]:
        """``rounds`` rounds per mode of :meth:`latency_round`, alternating off and on, each mode on its own
        ``ceil(jobs/4)`` kwok nodes of 4 GPUs and a ClusterQueue of ``jobs`` GPUs; returns the rounds, the
        medians per mode and the ratios on/off."""
        per_mode: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
        try:
            for mode in MODES:
                self.setup(scope(mode, "latency"), mode, (Nodes("n", -(-jobs // 4), 4),), (Flavor("gpu"),),
                           (Queue("bulk", "gpu", jobs),))
            for n in range(rounds):
                for mode in MODES:
                    per_mode[mode].append(self.latency_round(scope(mode, "latency"), jobs, f"r{n}"))
            rss = self.rss_mib()
        finally:
            self.clean()
        medians = {mode: {key: round(statistics.median(r[key] for r in rs), 3) for key in (
            "all_admitted_s", "all_running_s")} | {
            "admitted_p50_s": round(statistics.median(r["admitted_s"]["p50"] for r in rs), 3),
            "running_p50_s": round(statistics.median(r["running_s"]["p50"] for r in rs), 3),
            "kueue_cpu_s": (round(statistics.median(r["kueue_cpu_s"] for r in rs), 2)
                            if all(r["kueue_cpu_s"] is not None for r in rs) else None)}
            for mode, rs in per_mode.items()}
        ratios = {key: ratio(medians["on"][key] or 0, medians["off"][key] or 0) for key in medians["on"]}
        return {"jobs": jobs, "rounds": per_mode, "median": medians, "ratio_on_over_off": ratios,
                "kueue_rss_mib_after": rss, "poll_s": POLL_S}


def run(api: k8s.ApiClient, root: Path, jobs: int, rounds: int, log: Callable[[str], None]) -> dict[str, Any]:
    """The whole benchmark on the sandbox whose admin client is ``api`` and state dir ``root``: every scenario in
    both modes, then the latency rounds; returns the results document (without load averages of the whole run)."""
    bench = Bench(api, kueue_pid(root))
    results: dict[str, Any] = {}
    for sc in scenarios():
        results[sc.name] = {"harm_class": sc.harm, "description": sc.description, "why": sc.why}
        for mode in MODES:
            try:
                results[sc.name][mode] = bench.scenario(sc, mode)
            except (k8s.ApiException, TimeoutError) as exc:  # recorded: the other scenarios still run
                results[sc.name][mode] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
            log(f"{sc.name} TAS {mode}: {json.dumps(results[sc.name][mode].get('inference', results[sc.name][mode]))}")
    latency: dict[str, Any]
    try:
        latency = bench.latency(jobs, rounds)
        log(f"latency medians: {json.dumps(latency['median'])}; ratio on/off "
            f"{json.dumps(latency['ratio_on_over_off'])}")
    except (k8s.ApiException, TimeoutError) as exc:
        latency = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
        log(f"latency: {latency['error']}")
    return {"scenarios": results, "latency": latency, "kueue_pid_found": bench.pid is not None}


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m kueue_cohorts.benchmarks.tas [--jobs N] [--rounds N] [--running] [--write]``: run :func:`run` on a
    fresh
    sandbox in a scratch directory (``--running``: the one ``kueue-cohorts sandbox up`` started), print the document
    and with ``--write`` rewrite ``benchmarks/results/tas.json``. Returns 0 (the figures are the result)."""
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m kueue_cohorts.benchmarks.tas",
                                     description=summary(__doc__))
    parser.add_argument("--jobs", type=int, default=50, help="one-GPU Jobs per latency round")
    parser.add_argument("--rounds", type=int, default=3, help="latency rounds per mode (alternating off/on)")
    parser.add_argument("--running", action="store_true", help="use the running sandbox (kueue-cohorts sandbox up)")
    parser.add_argument("--write", action="store_true", help="rewrite benchmarks/results/tas.json with this run")
    args = parser.parse_args(argv)
    started, load_before = time.monotonic(), load_average()

    def go(root: Path) -> dict[str, Any]:
        api = kconfig.new_client_from_config(config_file=str(root / "kubeconfig"))
        return run(api, root, args.jobs, args.rounds, log=lambda line: print(line, file=sys.stderr, flush=True))

    if args.running:
        doc = go(SandboxPaths.default().root)
    else:
        with scratch_dirs() as (root, _):
            Sandbox(SandboxPaths(root)).up(stack_path("dev"))
            doc = go(root)
    doc = {"measured_at": utc_now(), "kueue": "v0.19.2", "feature_gate": "TopologyAwareScheduling (Beta, default on "
           "since 0.14; the sandbox's Configuration leaves it at its default)", "topology": f"one level {HOSTNAME}",
           **doc, "coverage": COVERAGE, "seconds": round(time.monotonic() - started),
           "load_before": load_before, "load_after": load_average(),
           "command": f"python -m kueue_cohorts.benchmarks.tas --jobs {args.jobs} --rounds {args.rounds}"
                      f"{' --running' if args.running else ''}"}
    print(json.dumps(doc, indent=2))
    save("tas", doc, write=args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
