"""The differential fuzzer of issue 37: generated stacks, the product's verdict, and an adversary on the sandbox.

For each stack :func:`stack_configs` generates (hypothesis, over the settings schema: node pools with labels and
shapes, one or several ResourceFlavors with overlapping or empty nodeLabels, inference quotas per flavor, inference
services and their pod shapes, a PreemptibleTrainingRuntime with its grace period, the asymmetric layout with or
without a second, symmetric cohort, fenced or open GPU nodes), :func:`verdict` asks the product: the settings check
and the rule book, :func:`components.checks.validation.validate`, the path ``kueue-cohorts validate`` takes. Every
stack it accepts (and a sample of those it refuses) then meets :class:`Adversary` on the sandbox, whose real
kube-scheduler, Kueue manager and job controllers decide:

1. the sandbox is reset (the previous stack's objects and kwok nodes deleted) and the stack's nodes are created as
   kwok nodes shaped like its nodePools (``sandbox.kwok.node_manifests``, taints included), its Kueue objects
   applied (Namespaces, ResourceFlavors, Cohorts, ClusterQueues, LocalQueues, WorkloadPriorityClasses, as
   ``cohorts.expected.expected_objects`` renders them);
2. training fills everything it may borrow: batch/v1 Jobs on the training LocalQueue at the training priority, each
   pod in the runtime's per-node shape (its limits, ``numNodes`` pods) with the runtime's real
   terminationGracePeriodSeconds, until Kueue admits no more;
3. inference asks for its whole nominalQuota in its declared pod shapes (its services' per-replica requests, in
   order, up to maxReplicas each, while they fit the nominalQuota; without services, 1-GPU pods), as Jobs on the
   inference LocalQueue at the inference priority.

The promise holds when every inference pod is Running within the reclaim budget (``reclaimBudgetSeconds`` of the
inference side; :data:`DEFAULT_RECLAIM_BUDGET_S` = the guide's 60 s where the settings do not carry it) plus
:data:`SCHEDULING_SLACK_S`, measured from its Workload's admission: the reclaim the budget bounds starts when Kueue
admits the preemptor and evicts its victims. Kueue admits a burst of reclaiming Workloads one per ClusterQueue per
scheduling cycle, each once its victims' quota is released (pkg/scheduler/scheduler.go ``schedule``: ``Heads``,
one head per active ClusterQueue, v0.19.2, as whatif/scheduler.py ports it; about 1 s each here, 8 replicas in 9 s
alone and 14 s with eight stacks side by side): that queueing is reported (``admitted_s``), not charged to the
reclaim; a Workload never admitted is judged from the submission. The sandbox's kwok keeps a deleted pod on its node
for its grace period (``sandbox.kwok``), so the trainer's grace is honoured. A stack the product accepts and the
adversary breaks is a **false accept**; a refused stack where the adversary finds no harm is a candidate **false
refusal**.

Used by ``tests/e2e/test_29_fuzzer.py`` (a small seeded batch) and ``python -m kueue_cohorts.benchmarks.fuzz`` (``make
bench``: a
large one, writing the false-accept rate with its seed, count and budget).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from hypothesis import HealthCheck, Phase, given
from hypothesis import seed as hseed
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from kubernetes import client as k8s
from kubernetes import config as kconfig

from kueue_cohorts.benchmarks import add_write_flag, save, summary
from kueue_cohorts.benchmarks.sandbox import scratch_dirs
from kueue_cohorts.cohorts.expected import expected_objects
from kueue_cohorts.components.checks.validation import Validation, validate
from kueue_cohorts.components.model.alerts import RECLAIM_BUDGET_SECONDS, reclaim_budget_seconds
from kueue_cohorts.components.settings import Settings, quantity
from kueue_cohorts.components.settings.stackfile import stack_path
from kueue_cohorts.policy.rules.vocabulary.objects import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from kueue_cohorts.sandbox import kwok
from kueue_cohorts.sandbox.apply import request_json
from kueue_cohorts.sandbox.cluster import Sandbox
from kueue_cohorts.sandbox.paths import SandboxPaths

GPU = "nvidia.com/gpu"
DEFAULT_RECLAIM_BUDGET_S = RECLAIM_BUDGET_SECONDS
"""The guide's reclaim budget in seconds, used where the settings carry no
``inferenceTraining.inference.reclaimBudgetSeconds``."""
ADMISSION_CAP_S = 120
"""Seconds after inference's submission past which a Workload not yet admitted no longer extends the wait."""
SCHEDULING_SLACK_S = 10
"""Seconds allowed on top of the budget for Kueue's admission cycle and the kube-scheduler's retry of the waiting
pod (kube-scheduler v1.36.3 ``podMaxBackoffSeconds`` default 10)."""
FILL_SETTLE_S = 4.0
"""Training's fill is done when no further training Workload has been admitted for this long (seconds)."""
KUEUE_API = "/apis/kueue.x-k8s.io/v1beta2"
FUZZ_LABEL = ("kueue-cohorts/fuzz", "true")
#: Label vocabulary of the generated pools and flavors (overlapping on purpose: "pool" vs "gpu").
LABELS: tuple[dict[str, str], ...] = ({}, {"pool": "a"}, {"pool": "b"}, {"gpu": "x"}, {"pool": "a", "gpu": "x"})
FENCE = {"key": "kueue-cohorts/gpu", "value": "true", "effect": "NoSchedule"}
#: The taint that keeps each stack on its own kwok nodes (value: the stack's name); its flavors tolerate it.
ISOLATION = {"key": "kueue-cohorts/fuzz-stack", "effect": "NoSchedule"}
#: The taint that keeps the adversary off nodes that are not a stack's (the sandbox's own, e.g. the dev stack's).
EXCLUDED = {"key": "kueue-cohorts/fuzz-excluded", "value": "true", "effect": "NoSchedule"}
#: (apiVersion, kind) -> collection path ({namespace} filled in) of the objects the adversary applies.
PATHS = {
    ("v1", "Namespace"): "/api/v1/namespaces",
    ("kueue.x-k8s.io/v1beta2", "ResourceFlavor"): f"{KUEUE_API}/resourceflavors",
    ("kueue.x-k8s.io/v1beta2", "Cohort"): f"{KUEUE_API}/cohorts",
    ("kueue.x-k8s.io/v1beta2", "ClusterQueue"): f"{KUEUE_API}/clusterqueues",
    ("kueue.x-k8s.io/v1beta2", "LocalQueue"): KUEUE_API + "/namespaces/{namespace}/localqueues",
    ("kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass"): f"{KUEUE_API}/workloadpriorityclasses",
}


# --- the generator ----------------------------------------------------------------------------------------------


def _quota(gpus: int, cpu_per_gpu: int, mem_per_gpu: int) -> dict[str, str]:
    return {"cpu": str(max(1, gpus * cpu_per_gpu)), "memory": f"{max(1, gpus * mem_per_gpu)}Gi", GPU: str(gpus)}


@st.composite
def stack_configs(draw: Callable[..., Any], prefix: str = "fz") -> dict[str, Any]:
    """A stack's raw ``kueue-cohorts:*`` config (key without prefix -> value), every name starting with ``prefix``
    (a DNS label of at most 10 characters) so that stacks run side by side on one sandbox without clashing.

    Varies: 1-2 node pools (1-2 nodes of 1-4 GPUs, cpu 4-16, memory 16-64Gi, labels from :data:`LABELS`); one
    ResourceFlavor (nodeLabels drawn from :data:`LABELS`: empty, a pool's, or another's) or one per pool; inference's
    nominalQuota per flavor (1 GPU up to one more than the flavor's pools hold); 0-2 services with per-replica
    shapes of 1-4 GPUs and 1-3 replicas; a TrainingRuntime (or none) of 1-4 GPUs per node on 1-2 nodes, with a grace
    period of 60 s, 75 s or derived from a checkpoint save of 30-3000 s; fenced GPU nodes or not; a second cohort
    (the symmetric layout with one tenant) or not.
    """
    n_pools = draw(st.integers(1, 2))
    pools: list[dict[str, Any]] = []
    for i in range(n_pools):
        pool: dict[str, Any] = {
            "name": f"{prefix}p{i}", "count": draw(st.integers(1, 2)),
            "capacity": {"cpu": str(draw(st.sampled_from([4, 8, 16]))),
                         "memory": f"{draw(st.sampled_from([16, 32, 64]))}Gi", GPU: str(draw(st.integers(1, 4)))},
            "labels": dict(draw(st.sampled_from(LABELS)))}
        pools.append(pool)
    fenced = draw(st.booleans())
    tolerations = [{**FENCE, "operator": "Equal"}] if fenced else []
    if fenced:
        for pool in pools:
            pool["taints"] = [dict(FENCE)]
    several = n_pools == 2 and draw(st.booleans())
    flavor_names = [f"{prefix}-f{i}" for i in range(n_pools if several else 1)]
    raw: dict[str, Any] = {"cluster": {"mode": "sandbox"}, "nodePools": pools}
    if several:
        raw["resourceFlavors"] = []
        for i, name in enumerate(flavor_names):
            pools[i]["resourceFlavor"] = name
            labels = draw(st.sampled_from([pools[i]["labels"], *LABELS]))
            raw["resourceFlavors"].append({"name": name, "nodeLabels": dict(labels), "tolerations": tolerations})
    else:
        labels = draw(st.sampled_from([pools[0]["labels"], *LABELS]))
        raw["resourceFlavor"] = {"name": flavor_names[0], "nodeLabels": dict(labels), "tolerations": tolerations}

    def held(flavor_index: int) -> int:
        chosen = [pools[flavor_index]] if several else pools
        return sum(int(p["capacity"][GPU]) * p["count"] for p in chosen)

    cpu_per_gpu, mem_per_gpu = draw(st.sampled_from([1, 2])), draw(st.sampled_from([4, 8]))
    quotas = [_quota(draw(st.integers(1, held(i) + 1)), cpu_per_gpu, mem_per_gpu)
              for i in range(len(flavor_names))]
    inference: dict[str, Any] = {
        "clusterQueue": f"{prefix}-icq", "localQueue": f"{prefix}-ilq", "namespaces": [f"{prefix}-inf"],
        "priorityClass": {"name": f"{prefix}-ip", "value": 1000}}
    if several:
        inference["flavors"] = [{"name": n, "nominalQuota": q} for n, q in zip(flavor_names, quotas, strict=True)]
    else:
        inference["nominalQuota"] = quotas[0]
    services = []
    for j in range(draw(st.integers(0, 2))):
        gpus = draw(st.integers(1, 4))
        replicas = draw(st.integers(1, 3))
        services.append({"name": f"{prefix}-s{j}", "modelFormat": "huggingface", "storageUri": "hf://fuzz/model",
                         "requests": {"cpu": str(gpus * cpu_per_gpu), "memory": f"{gpus * mem_per_gpu}Gi",
                                      GPU: str(gpus)},
                         "minReplicas": replicas, "maxReplicas": replicas})
    if services:
        inference["services"] = services
    training: dict[str, Any] = {
        "clusterQueue": f"{prefix}-tcq", "localQueue": f"{prefix}-tlq", "namespaces": [f"{prefix}-trn"],
        "priorityClass": {"name": f"{prefix}-tp", "value": 10}}
    raw["inferenceTraining"] = {"cohort": f"{prefix}-c", "inference": inference, "training": training}
    raw["kueue"] = {"integrations": ["batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "pod",
                                    "deployment"]}
    if draw(st.booleans()):
        gpus = draw(st.integers(1, 4))
        runtime: dict[str, Any] = {
            "name": f"{prefix}-rt", "image": "registry.invalid/fuzz:trainer", "numNodes": draw(st.integers(1, 2)),
            "requests": {"cpu": "1", "memory": "2Gi"},
            "limits": {"cpu": str(gpus * cpu_per_gpu), "memory": f"{gpus * mem_per_gpu}Gi", GPU: str(gpus)}}
        grace = draw(st.sampled_from(["60", "75", "save"]))
        if grace == "save":
            runtime["checkpointSaveSeconds"] = draw(st.sampled_from([30, 300, 3000]))
        else:
            runtime["terminationGracePeriodSeconds"] = int(grace)
        raw["trainingRuntime"] = runtime
        training["checkpoint"] = {"claimName": f"{prefix}-ckpt"}
    if draw(st.booleans()):
        floor = {"cpu": "1", "memory": "2Gi", GPU: "1"}
        tenant: dict[str, Any] = {"name": f"{prefix}-t0", "priorityClass": f"{prefix}-sp"}
        if several:
            tenant["flavors"] = [{"name": flavor_names[0], "nominalQuota": floor}]
        else:
            tenant["floor"] = floor
        raw["sharedPool"] = {"cohort": f"{prefix}-sc", "priorityClasses": [{"name": f"{prefix}-sp", "value": 50}],
                             "tenants": [tenant]}
    return raw


def verdict(raw: Mapping[str, Any]) -> Validation:
    """The product's verdict on ``raw``: the settings check and the rule book (``kueue-cohorts validate``'s path).
    Accepted when ``problems`` is empty."""
    return validate(raw)


# --- the adversary ----------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What the adversary saw on one stack. Times in seconds from inference's submission.

    Attributes:
        name: the stack's prefix. accepted: the product's verdict. problems: its problems' text (refused stacks).
        held: True when every inference pod ran within ``budget_s + SCHEDULING_SLACK_S``; None when not run (no
            inference layout, or no declared pod shape fits the nominalQuota, which only a refused stack has).
        budget_s: the reclaim budget judged against. admitted_s: the last inference Workload's admission, seconds
        after submission (None when one was never admitted): Kueue admits a burst one Workload per ClusterQueue per
        scheduling cycle, each after its victims' quota is released. running_s: each inference pod's time to
        Running from the submission. reclaim_s: from its own Workload's admission (the reclaim the budget bounds).
        pending: inference pods still not Running at the deadline, with the scheduler's reason. training: training
        Workloads admitted by the fill. grace_s: the training pods' grace period. config: the raw stack.
    """

    name: str
    accepted: bool
    problems: list[str] = field(default_factory=list)
    held: Optional[bool] = None
    budget_s: int = DEFAULT_RECLAIM_BUDGET_S
    admitted_s: Optional[float] = None
    running_s: dict[str, float] = field(default_factory=dict)
    reclaim_s: dict[str, float] = field(default_factory=dict)
    pending: dict[str, str] = field(default_factory=dict)
    training: int = 0
    grace_s: int = 0
    config: dict[str, Any] = field(default_factory=dict)


def reclaim_budget(settings: Settings) -> int:
    """The inference side's reclaim budget in seconds, the figure the stack's alert uses
    (``components.model.alerts.reclaim_budget_seconds``)."""
    return reclaim_budget_seconds(settings)


def _shape(resources: Mapping[str, str]) -> dict[str, Decimal]:
    return {k: quantity.parse(v) for k, v in resources.items()}


def _fits(shape: Mapping[str, Decimal], left: Mapping[str, Decimal]) -> bool:
    return all(left.get(k, Decimal(0)) >= v for k, v in shape.items())


def inference_pods(settings: Settings) -> list[dict[str, str]]:
    """Inference's whole nominalQuota in its declared pod shapes: each service's per-replica requests, in order, up
    to its maxReplicas, while it fits what is left of the nominalQuota (summed over flavors); then, or without
    services, 1-GPU pods with the nominalQuota's cpu and memory per GPU. Returns each pod's requests."""
    it = settings.inference_training
    if it is None:
        return []
    left: dict[str, Decimal] = {}
    if it.inference.flavors:
        for flavor in it.inference.flavors:
            for k, v in flavor.nominal_quota.items():
                left[k] = left.get(k, Decimal(0)) + quantity.parse(v)
    else:
        left = _shape(it.inference.nominal_quota or {})
    pods: list[dict[str, str]] = []
    for service in it.inference.services:
        shape = _shape(service.requests)
        for _ in range(service.max_replicas):
            if not _fits(shape, left):
                break
            pods.append(dict(service.requests))
            left = {k: v - shape.get(k, Decimal(0)) for k, v in left.items()}
    gpus = int(left.get(GPU, 0))
    if gpus and not it.inference.services:
        per = {"cpu": str(left.get("cpu", Decimal(0)) / gpus), "memory": str(int(left.get("memory", 0) / gpus)),
               GPU: "1"}
        pods += [dict(per) for _ in range(gpus)]
    return pods


def training_pod(settings: Settings) -> tuple[dict[str, str], int, int]:
    """Training's pod shape (the runtime's per-node limits, else 1 GPU, 1 cpu, 1Gi), its pods per Job (numNodes)
    and their grace period (the runtime's, else 60 s)."""
    rt = settings.training_runtime
    if rt is None:
        return {"cpu": "1", "memory": "1Gi", GPU: "1"}, 1, 60
    limits = {k: str(v) for k, v in (rt.limits or {}).items()}
    return limits, rt.num_nodes, int(rt.grace_period_seconds)


def _job(name: str, namespace: str, queue: str, priority: str, requests: Mapping[str, str], pods: int,
         grace: int) -> dict[str, Any]:
    labels = {QUEUE_NAME_LABEL: queue, PRIORITY_CLASS_LABEL: priority}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace,
                                                                  "labels": labels},
            "spec": {"parallelism": pods, "completions": pods, "backoffLimit": 0, "template": {
                "metadata": {"labels": labels},
                "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": grace, "containers": [{
                    "name": "main", "image": "registry.invalid/fuzz:never-pulled",
                    "resources": {"requests": dict(requests), "limits": dict(requests)}}]}}}}


class Adversary:
    """Runs stacks against the sandbox behind ``api`` (an admin ApiClient), one at a time; several Adversaries run
    side by side on one sandbox. Each stack's kwok nodes carry the taint :data:`ISOLATION` keyed by the stack's name
    and each of its ResourceFlavors tolerates it (added to what the stack renders), so that a stack's pods land only
    on its own nodes, as on its own cluster. ``clock`` and ``sleep`` are time.monotonic and time.sleep (seconds)."""

    def __init__(self, api: k8s.ApiClient, poll_s: float = 0.5, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.api, self.poll_s, self.clock, self.sleep = api, poll_s, clock, sleep
        self._created: list[tuple[str, str]] = []  # (collection path, name), in creation order

    def _pods(self, namespace: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = request_json(
            self.api, "GET", f"/api/v1/namespaces/{namespace}/pods").get("items") or []
        return items

    # --- objects ---

    def _apply(self, obj: Mapping[str, Any], status: bool = False) -> None:
        key = (obj["apiVersion"], obj["kind"])
        base = PATHS[key].format(**obj["metadata"]) if key in PATHS else "/api/v1/nodes"
        query = [("fieldManager", "kueue-cohorts-fuzz"), ("force", "true")]
        name = obj["metadata"]["name"]
        body = {k: v for k, v in obj.items() if k != "status"}
        request_json(self.api, "PATCH", f"{base}/{name}", body=body, query=query,
                     content_type="application/apply-patch+yaml")
        if status and obj.get("status"):
            request_json(self.api, "PATCH", f"{base}/{name}/status", query=query,
                         content_type="application/apply-patch+yaml",
                         body={"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": {"name": name},
                               "status": obj["status"]})
        self._created.append((base, name))

    def reset(self) -> None:
        """Delete what the last stack made, newest first: its pods at once (grace 0: a reset is no reclaim), its
        Jobs, Kueue objects, Namespaces and kwok nodes."""
        namespaces = [name for base, name in self._created if base == "/api/v1/namespaces"]
        for ns in namespaces:
            for kind in ("jobs",):
                request_json(self.api, "DELETE", f"/apis/batch/v1/namespaces/{ns}/{kind}",
                             query=[("propagationPolicy", "Background")])
            request_json(self.api, "DELETE", f"/api/v1/namespaces/{ns}/pods", query=[("gracePeriodSeconds", "0")])
        for base, name in reversed(self._created):
            try:
                request_json(self.api, "DELETE", f"{base}/{name}")
            except k8s.ApiException as exc:
                if exc.status != 404:
                    raise
        self._created = []

    # --- one stack ---

    def apply_stack(self, name: str, settings: Settings) -> None:
        """Create the stack's kwok nodes (its nodePools, tainted with :data:`ISOLATION` valued ``name``) and its
        Kueue objects (Namespaces, ResourceFlavors tolerating that taint, WorkloadPriorityClasses, Cohorts,
        ClusterQueues, LocalQueues, as ``cohorts.expected.expected_objects`` renders them), then wait (at most 30 s)
        until its ClusterQueues are Active. Raises ``kubernetes.client.ApiException`` when the API server refuses an
        object."""
        isolation = {**ISOLATION, "value": name}
        for node in kwok.node_manifests(settings.node_pools):
            node["metadata"]["labels"][FUZZ_LABEL[0]] = FUZZ_LABEL[1]
            node["spec"]["taints"] = [*node["spec"].get("taints", []), isolation]
            self._apply(node, status=True)
        order = ("Namespace", "ResourceFlavor", "WorkloadPriorityClass", "Cohort", "ClusterQueue", "LocalQueue")
        objects = [m for m in expected_objects(settings) if (m["apiVersion"], m["kind"]) in PATHS]
        for obj in objects:
            if obj["kind"] == "ResourceFlavor":
                spec = obj.setdefault("spec", {})
                spec["tolerations"] = [*spec.get("tolerations", []), {**isolation, "operator": "Equal"}]
        for kind in order:
            for obj in objects:
                if obj["kind"] == kind:
                    self._apply(obj)
        self._wait_queues_active([m["metadata"]["name"] for m in objects if m["kind"] == "ClusterQueue"])

    def run(self, name: str, settings: Settings, accepted: bool, raw: Mapping[str, Any]) -> Outcome:
        """Play the adversary on ``settings`` (see the module docstring). Returns the Outcome; the stack's objects
        stay until the next :meth:`reset` (or :meth:`close`)."""
        self.reset()
        budget = reclaim_budget(settings)
        shape, pods_per_job, grace = training_pod(settings)
        out = Outcome(name, accepted, budget_s=budget, grace_s=grace, config=dict(raw))
        it = settings.inference_training
        if it is None:
            return out
        self.apply_stack(name, settings)
        trn_ns, inf_ns = it.training.namespaces[0], it.inference.namespaces[0]
        out.training = self._fill_training(it.training.local_queue, it.training.priority_class.name, trn_ns,
                                           shape, pods_per_job, grace)
        asks = inference_pods(settings)
        if not asks:  # no declared shape fits the nominalQuota: nothing to ask, no verdict (a refused stack)
            return out
        start = self.clock()
        for i, requests in enumerate(asks):
            self._create_job(_job(f"inference-{i}", inf_ns, it.inference.local_queue,
                                  it.inference.priority_class.name, requests, 1, 0))
        allowed = budget + SCHEDULING_SLACK_S
        names = [f"inference-{i}" for i in range(len(asks))]
        admitted: dict[str, float] = {}
        while True:
            now = self.clock()
            for wl in self._workloads(inf_ns):
                job = _owner_name(wl)
                if job in names and job not in admitted and _admitted(wl):
                    admitted[job] = now - start
            for pod in self._pods(inf_ns):
                job = _job_of(pod)
                if job in names and job not in out.running_s and _phase(pod) == "Running":
                    out.running_s[job] = round(now - start, 1)
            # each reclaim is judged from its Workload's admission (Kueue evicts the victim then); one never
            # admitted is judged from the submission
            deadline = start + max([allowed, *(t + allowed for t in admitted.values())])
            if len(out.running_s) == len(names) or now > min(deadline, start + ADMISSION_CAP_S + allowed):
                break
            self.sleep(self.poll_s)
        out.reclaim_s = {job: round(t - admitted.get(job, 0.0), 1) for job, t in out.running_s.items()}
        out.admitted_s = round(max(admitted.values()), 1) if len(admitted) == len(names) and names else None
        for pod in self._pods(inf_ns):
            job = _job_of(pod)
            if job in names and job not in out.running_s:
                cond = _condition(pod, "PodScheduled")
                out.pending[job] = (f"{cond.get('reason')}: {cond.get('message')}" if cond.get("reason")
                                    else "gated or not admitted")
        for job in names:
            if job not in out.running_s and job not in out.pending:
                out.pending[job] = "no pod (Workload not admitted)"
        out.held = not out.pending and all(t <= allowed for t in out.reclaim_s.values())
        return out

    def _create_job(self, job: Mapping[str, Any]) -> None:
        ns = job["metadata"]["namespace"]
        request_json(self.api, "POST", f"/apis/batch/v1/namespaces/{ns}/jobs", body=job)

    def _workloads(self, namespace: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = request_json(
            self.api, "GET", f"{KUEUE_API}/namespaces/{namespace}/workloads").get("items") or []
        return items

    def _wait_queues_active(self, queues: Sequence[str], timeout_s: float = 30) -> None:
        deadline = self.clock() + timeout_s
        while self.clock() < deadline:
            active = 0
            for name in queues:
                try:
                    cq = request_json(self.api, "GET", f"{KUEUE_API}/clusterqueues/{name}")
                except k8s.ApiException:
                    continue
                if any(c.get("type") == "Active" and c.get("status") == "True"
                       for c in (cq.get("status") or {}).get("conditions") or []):
                    active += 1
            if active == len(queues):
                return
            self.sleep(self.poll_s)

    def _fill_training(self, queue: str, priority: str, namespace: str, shape: Mapping[str, str], pods: int,
                       grace: int) -> int:
        """Submit training Jobs until Kueue admits no more (one pending Job stays), wait for the admitted ones'
        pods to run; returns how many were admitted."""
        gpus = max(1, int(quantity.parse(shape.get(GPU, "1")))) * pods
        most = 64 // gpus + 1
        submitted = admitted = 0
        last_change = self.clock()
        while submitted < most:
            self._create_job(_job(f"train-{submitted}", namespace, queue, priority, shape, pods, grace))
            submitted += 1
            while True:  # wait for this one's verdict: admitted, or nothing new for FILL_SETTLE_S
                now_admitted = sum(1 for wl in self._workloads(namespace) if _admitted(wl))
                if now_admitted > admitted:
                    admitted, last_change = now_admitted, self.clock()
                    break
                if self.clock() - last_change > FILL_SETTLE_S:
                    break
                self.sleep(self.poll_s)
            if admitted < submitted:
                break
        deadline = self.clock() + 30
        while self.clock() < deadline:  # the admitted ones' pods placed and Running (or refused by the scheduler)
            if all(_phase(p) == "Running" or _condition(p, "PodScheduled").get("status") == "False"
                   for p in self._pods(namespace)):
                break
            self.sleep(self.poll_s)
        return admitted


def _job_of(pod: Mapping[str, Any]) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get("batch.kubernetes.io/job-name", ""))


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase", ""))


def _condition(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    found: dict[str, Any] = next((c for c in (obj.get("status") or {}).get("conditions") or []
                                  if c.get("type") == kind), {})
    return found


def _admitted(workload: Mapping[str, Any]) -> bool:
    return any(c.get("type") == "Admitted" and c.get("status") == "True"
               for c in (workload.get("status") or {}).get("conditions") or [])


def _owner_name(workload: Mapping[str, Any]) -> str:
    refs = (workload.get("metadata") or {}).get("ownerReferences") or []
    return str(refs[0].get("name")) if refs else ""


# --- batches ----------------------------------------------------------------------------------------------------


@dataclass
class Batch:
    """A batch's result: ``seed``, how many stacks were drawn, the outcomes run, and the summary counts."""

    seed: int
    drawn: int = 0
    accepted: int = 0
    refused: int = 0
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def false_accepts(self) -> list[Outcome]:
        """Accepted stacks the adversary broke."""
        return [o for o in self.outcomes if o.accepted and o.held is False]

    @property
    def false_refusal_candidates(self) -> list[Outcome]:
        """Refused stacks where the adversary found no harm."""
        return [o for o in self.outcomes if not o.accepted and o.held is True]

    def summary(self) -> dict[str, Any]:
        """The counts, the false-accept rate over the accepted stacks run, and the budget."""
        run = [o for o in self.outcomes if o.accepted and o.held is not None]
        return {"seed": self.seed, "drawn": self.drawn, "accepted": self.accepted, "refused": self.refused,
                "accepted_run": len(run), "false_accepts": len(self.false_accepts),
                "false_accept_rate": round(len(self.false_accepts) / len(run), 4) if run else None,
                "refused_run": len([o for o in self.outcomes if not o.accepted]),
                "false_refusal_candidates": len(self.false_refusal_candidates),
                "budget_s": sorted({o.budget_s for o in self.outcomes}), "slack_s": SCHEDULING_SLACK_S}


PLACEHOLDER = "zzq"
"""The prefix the strategy draws names with; each drawn stack's names get their own prefix (``fz<n>``)."""


def renamed(raw: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """``raw`` with every name's :data:`PLACEHOLDER` prefix replaced by ``prefix``."""
    renamed_raw: dict[str, Any] = json.loads(json.dumps(raw).replace(PLACEHOLDER, prefix))
    return renamed_raw


def draw_batch(seed: int, accepted_target: int, refused_target: int = 0, max_draws: int = 2000
               ) -> tuple[int, list[tuple[str, dict[str, Any], Validation]]]:
    """Draw stacks with hypothesis (seeded with ``seed``, generation only: no shrinking, no example database, so the
    same seed draws the same stacks) and judge each (:func:`verdict`) until ``accepted_target`` accepted and
    ``refused_target`` refused ones (whose shape is valid) are kept, or ``max_draws`` were drawn. Returns (stacks
    drawn, the kept ones as (name ``fz<n>``, raw config, verdict))."""
    kept: list[tuple[str, dict[str, Any], Validation]] = []
    drawn = 0

    def wanted(accepted: bool) -> bool:
        have = sum(1 for _, _, v in kept if (not v.problems) == accepted)
        return have < (accepted_target if accepted else refused_target)

    @hsettings(max_examples=max_draws, database=None, deadline=None, phases=[Phase.generate],
               suppress_health_check=list(HealthCheck))
    @hseed(seed)
    @given(stack_configs(prefix=PLACEHOLDER))
    def one(raw: dict[str, Any]) -> None:
        nonlocal drawn
        if not (wanted(True) or wanted(False)):
            return
        name = f"fz{drawn}"
        drawn += 1
        result = verdict(renamed(raw, name))
        if wanted(not result.problems) and result.settings is not None:
            kept.append((name, renamed(raw, name), result))

    one()
    return drawn, kept


def run_batch(kubeconfig: Path, seed: int, accepted_target: int, refused_target: int = 0, max_draws: int = 2000,
              workers: int = 4, exclude: Sequence[str] = (), log: Callable[[str], None] = lambda _: None) -> Batch:
    """Draw and judge stacks (:func:`draw_batch`), then run each kept one through an :class:`Adversary` on the
    sandbox whose admin kubeconfig is ``kubeconfig``, ``workers`` stacks side by side. ``exclude`` names nodes that
    must take no part (tainted :data:`EXCLUDED` meanwhile, their taints restored after). Returns the Batch."""
    drawn, kept = draw_batch(seed, accepted_target, refused_target, max_draws)
    batch = Batch(seed, drawn=drawn)
    batch.accepted = sum(1 for _, _, v in kept if not v.problems)
    batch.refused = len(kept) - batch.accepted
    admin = kconfig.new_client_from_config(config_file=str(kubeconfig))
    restore: dict[str, Any] = {}
    for node in exclude:
        taints = request_json(admin, "GET", f"/api/v1/nodes/{node}").get("spec", {}).get("taints")
        restore[node] = taints
        _patch_taints(admin, node, [*(taints or []), EXCLUDED])

    def play(item: tuple[str, dict[str, Any], Validation]) -> Outcome:
        name, raw, result = item
        adversary = Adversary(kconfig.new_client_from_config(config_file=str(kubeconfig)))
        assert result.settings is not None  # draw_batch keeps only stacks of a valid shape
        try:
            outcome = adversary.run(name, result.settings, not result.problems, raw)
        finally:
            adversary.reset()
        outcome.problems = [str(p) for p in result.problems]
        log(f"{name}: {'accepted' if outcome.accepted else 'refused'}, promise "
            f"{'held' if outcome.held else 'broken'}; training admitted {outcome.training} (grace "
            f"{outcome.grace_s} s), inference admitted after {outcome.admitted_s} s, running {outcome.running_s}, "
            f"pending {outcome.pending}")
        return outcome

    try:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            batch.outcomes = list(pool.map(play, kept))
    finally:
        for node, taints in restore.items():
            _patch_taints(admin, node, taints)
    return batch


def _patch_taints(api: k8s.ApiClient, node: str, taints: Optional[list[Any]]) -> None:
    request_json(api, "PATCH", f"/api/v1/nodes/{node}", body={"spec": {"taints": taints}},
                 content_type="application/merge-patch+json")


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m kueue_cohorts.benchmarks.fuzz [--seed N] [--accepted N] [--refused N] [--max-draws N] [--workers N]
    [--running] [--write]`` (``make bench``): a batch on a fresh sandbox in a scratch directory, up with the dev
    stack's nodes, which take no part (``--running``: the sandbox ``python -m kueue_cohorts.sandbox up`` started, its
    node
    ``gpu-0`` excluded). Prints the summary (seed, stacks drawn and run, false-accept rate over the accepted stacks
    run, budget, seconds) and every false accept and candidate false refusal with its stack; with ``--write`` also
    writes them to benchmarks/results/fuzz.json. Returns 0 (the figures are the result; false accepts are
    reported, not an error)."""
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m kueue_cohorts.benchmarks.fuzz",
                                     description=summary(__doc__))
    parser.add_argument("--seed", type=int, default=37)
    parser.add_argument("--accepted", type=int, default=200, help="accepted stacks to run")
    parser.add_argument("--refused", type=int, default=20, help="refused stacks to run")
    parser.add_argument("--max-draws", type=int, default=3000)
    parser.add_argument("--workers", type=int, default=8, help="stacks run side by side")
    parser.add_argument("--running", action="store_true",
                        help="use the running sandbox (python -m kueue_cohorts.sandbox up)")
    add_write_flag(parser)
    args = parser.parse_args(argv)
    started = time.monotonic()

    def go(kubeconfig: Path) -> Batch:
        return run_batch(kubeconfig, args.seed, args.accepted, args.refused, args.max_draws, args.workers,
                         ("gpu-0",), log=lambda line: print(line, file=sys.stderr, flush=True))

    if args.running:
        batch = go(SandboxPaths.default().kubeconfig)
    else:
        with scratch_dirs() as (root, _):
            Sandbox(SandboxPaths(root)).up(stack_path("dev"))
            batch = go(root / "kubeconfig")
    doc = {"summary": {**batch.summary(), "seconds": round(time.monotonic() - started)},
           "false_accepts": [asdict(o) for o in batch.false_accepts],
           "false_refusal_candidates": [asdict(o) for o in batch.false_refusal_candidates]}
    print(json.dumps(doc, indent=2, sort_keys=True))
    save("fuzz", doc, write=args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
