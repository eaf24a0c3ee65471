"""PODS_FIT_NODES (stack policy), promise 1: every pod Kueue may admit finds a node, not just quota.

Kueue admits by quota, summed over a flavor; the kube-scheduler then needs all of one pod's requests on ONE node of
the nodes the flavor selects (Kubernetes v1.36.3 `pkg/scheduler/framework/plugins/noderesources/fit.go` fitsRequest,
`vocabulary/placement.py`). Kueue copies the assigned flavor's nodeLabels into the pod's nodeSelector (Kueue v0.19.2
`pkg/podset/podset.go` FromAssignment), so that one node must be among the pools the flavor selects
(`cohort_nominal_within_capacity.flavor_pools`). Without Topology-Aware Scheduling Kueue never looks at nodes
(`apis/kueue/v1beta2/clusterqueue_types.go` nominalQuota: "should represent the resources in the cluster available
for running jobs"; the All-or-nothing page: 8 free GPUs split 4+4 still admit an 8-GPU pod, which then stays Pending),
so a pod that fits the quota and no node is admitted, holds the quota and stays Pending for ever. Judged:

1. one pod: every pod shape of every serving workload (InferenceService predictor replica, Deployment, StatefulSet,
   LeaderWorkerSet leader and worker) queued to a ClusterQueue of the stack, every TrainingRuntime's trainer pod (for
   the ClusterQueues behind the LocalQueues of its namespace) and every TrainJob's that overrides
   `spec.trainer.resourcesPerNode`, fits one node (cpu, memory, GPUs together, not summed) of the pools of EVERY flavor
   Kueue may assign it: a flavor of the resource group covering its resources whose nominalQuota + borrowingLimit
   holds the pod (`pkg/scheduler/flavorassigner`: Kueue takes the first flavor whose quota fits, and which one that is
   depends on what is in use then);
2. a training job's pods together: numNodes trainer pods, which Kueue admits at once when their sum fits the quota,
   fit the flavor's nodes (identical pods: sum over nodes of the pods one node holds; exact whatever the order);
3. inference's whole nominalQuota as its declared pod shapes: per flavor of an inference ClusterQueue, no order of
   arrival and no choice of nodes (the scheduler binds one pod at a time, spreading by LeastAllocated) can leave a pod
   that Kueue admitted within the nominalQuota with no node (`placement.blocking_placement`, an exact bounded search
   over the workloads' pods at their peak replicas plus surge). Three 3-GPU pods on 4-GPU nodes need three nodes,
   not 9/4 of them; a 2-GPU pod spread onto each of two 4-GPU nodes strands a 4-GPU pod of the same 8-GPU quota.
   Flavors of the ClusterQueue whose nodeLabels select common pools are placed together (their pods meet on those
   nodes: one quota, the sum of theirs, on the union of their pools; wider than Kueue's per-flavor assignment, so it
   never accepts a stranding); without any declared serving pod, the nominalQuota is judged as 1-GPU pods with its
   per-GPU share of cpu and memory (what a replica sized by the quota asks). Both found by the fuzzer
   (benchmarks/fuzz.py, seed 37: stacks fz1460 and fz1127);
4. inference's pods beside the pods of the ClusterQueues that borrow its idle quota (training): Kueue admits an
   inference pod by quota and preempts borrowers chosen by quota, never by node (Kueue v0.19.2
   `pkg/scheduler/preemption/preemption.go`; kueue#5243), so the search of 3 runs again with the borrowers' pod
   shapes (a TrainingRuntime's trainer pod, a TrainJob's override, else 1-GPU pods of inference's per-GPU share)
   filling nodes within the cohort's quota (inference's nominalQuota plus the borrowers' own), inference's pods
   within its own nominalQuota (borrowingLimit 0), and only an inference pod left with no node counts. Two 1-GPU
   training pods preempted on two 4-GPU nodes free 2 GPUs of quota and no node for a 2-GPU replica (fuzzer stack
   fz862).
   Borrowers' pods that are whole multiples of inference's one pod shape never strand it (each node's free room is
   then a whole number of inference pods).

What it does not model: other flavors' pods on shared nodes (COHORT_NOMINAL_WITHIN_CAPACITY refuses that overlap when
it can take inference's nodes), pods Kueue does not manage, the pod's own nodeSelector and affinity, taints, the
`pods` allocatable, and a ClusterQueue whose pods span several resource groups (each group judged on its own).
Topology-Aware Scheduling (a `topologyName` on every flavor of the ClusterQueue) makes Kueue check per-node fit at
admission; this rule still judges such stacks.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from .cohort_nominal_within_capacity import LEGACY_CAPACITY, NODE_POOLS, flavor_pools
from .inference_rollout_fits_nominal import LWS_GROUP, is_serving_workload, lws_strategy_of, queue_of, strategy_of
from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.node_pools import NodePool, legacy_pool, parse_node_pools
from .vocabulary.objects import QUEUE_NAME_LABEL, KubeObject, guarded, unknown_violation, violation
from .vocabulary.paths import parse_path
from .vocabulary.placement import (
    Blocking,
    Shape,
    blocking_placement,
    closest_node,
    homogeneous_capacity,
    judged_resources,
)
from .vocabulary.quantity import parse, show
from .vocabulary.queues import QueueIndex
from .vocabulary.quota import QuotaEntry, quota_entries
from .vocabulary.resources import effective_request_fields, pod_requests
from .vocabulary.roles import ROLE_OPTIONS, inference_queue_names
from .vocabulary.serving import KSERVE_GROUP, replica_requests_with_fields
from .vocabulary.surge import surge_pods
from .vocabulary.trainer import RUNTIME_KINDS, TRAINER_GROUP, runtime_of, trainer_jobs
from .vocabulary.values import MISSING, UnknownValueError, Violation, as_list, as_map, get

_INFINITY = Decimal("Infinity")


def _binary(resource: str) -> bool:
    return resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")


def _amounts(values: Mapping[str, Decimal]) -> str:
    return ", ".join(f"'{r}' {show(v, _binary(r))}" for r, v in sorted(values.items()) if v > 0)


@dataclass(frozen=True)
class Pod:
    """One pod shape of the stack: the object that makes it, a name for messages, its requests (resource -> base
    units), the field that gives each requested resource, how many of it may run at once (`cap`), the ClusterQueue
    it is queued to, and for a trainer pod the numNodes of its job and where numNodes is written."""

    obj: KubeObject
    name: str
    requests: Mapping[str, Decimal]
    fields: Mapping[str, tuple[str, Any]]
    cap: int
    cluster_queue: str
    nodes: int = 1
    nodes_field: str = ""
    nodes_value: Any = MISSING
    serving: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict)


def _int(value: Any, default: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _template(spec: Any, path: str) -> tuple[dict[str, Decimal], dict[str, tuple[str, Any]]]:
    """A pod template's requests (`resources.pod_requests`) and, per resource, the first container field giving it."""
    requests = pod_requests(as_map(spec), path)
    fields: dict[str, tuple[str, Any]] = {}
    for kind in ("containers", "initContainers"):
        for i, container in enumerate(as_list(get(spec, kind))):
            for name, (_, where, raw) in effective_request_fields(container, f"{path}.{kind}[{i}]").items():
                fields.setdefault(name, (where, raw))
    return requests, fields


def _surge(strategy: Any, replicas: int) -> int:
    if strategy.error is not None or strategy.max_surge is None:
        return 0
    surge = surge_pods(strategy.max_surge, replicas)
    return min(surge, replicas) if strategy.capped else surge


def _serving_pods(obj: KubeObject, cq: str) -> list[Pod]:
    """The pod shapes of one serving workload queued to `cq`, each with how many may run at once (peak replicas plus
    the update surge). Raises ValueError for a quantity that does not parse, UnknownValueError."""
    if obj.is_kind(KSERVE_GROUP, "InferenceService"):
        read = replica_requests_with_fields(obj)
        low = max(_int(get(obj.spec, "predictor", "minReplicas"), 1), 1)
        peak = max(_int(get(obj.spec, "predictor", "maxReplicas"), 0), low)
        strategy = strategy_of(obj.props, ("spec", "predictor", "deploymentStrategy"))
        fields = {r: (where, get(obj.props, *parse_path(where))) for r, (_, where) in read.items()}
        return [Pod(obj, f"{obj.describe()} replica", {r: v for r, (v, _) in read.items()}, fields,
                    peak + _surge(strategy, peak), cq)]
    replicas = _int(get(obj.spec, "replicas"), 1)
    if obj.is_kind(LWS_GROUP, "LeaderWorkerSet"):
        lwt = get(obj.spec, "leaderWorkerTemplate")
        size = max(_int(get(lwt, "size"), 1), 1)
        groups = replicas + _surge(lws_strategy_of(obj.props), replicas)
        worker, worker_fields = _template(get(lwt, "workerTemplate", "spec"),
                                          "spec.leaderWorkerTemplate.workerTemplate.spec")
        out = []
        if get(lwt, "leaderTemplate") is not MISSING:
            leader, leader_fields = _template(get(lwt, "leaderTemplate", "spec"),
                                              "spec.leaderWorkerTemplate.leaderTemplate.spec")
            out.append(Pod(obj, f"{obj.describe()} leader pod", leader, leader_fields, groups, cq))
            if size > 1:
                out.append(Pod(obj, f"{obj.describe()} worker pod", worker, worker_fields, groups * (size - 1), cq))
        else:
            out.append(Pod(obj, f"{obj.describe()} pod", worker, worker_fields, groups * size, cq))
        return out
    requests, fields = _template(get(obj.spec, "template", "spec"), "spec.template.spec")
    surge = 0 if obj.is_kind("apps", "StatefulSet") else _surge(strategy_of(obj.props, ("spec", "strategy")),
                                                                 replicas)
    return [Pod(obj, f"{obj.describe()} pod", requests, fields, replicas + surge, cq)]


def _trainer_pods(objects: Sequence[KubeObject], queues: QueueIndex) -> list[Pod]:
    """The trainer pod of every TrainingRuntime (one per ClusterQueue behind the LocalQueues of its namespace) and of
    every TrainJob that overrides `spec.trainer.resourcesPerNode` or `numNodes` (Trainer v2.2.1
    `pkg/runtime/framework/plugins/jobset/builder.go`: resourcesPerNode replaces the `node` container's resources),
    on the runtime its `spec.runtimeRef` names (`trainer.runtime_of`: kind ClusterTrainingRuntime unless it says
    TrainingRuntime, `trainjob_types.go`) with its numNodes, else the runtime's `mlPolicy.numNodes` (default 1); a
    job of an override only is judged together (finding 2) at its `spec.trainer.resourcesPerNode`. Raises
    ValueError for a quantity that does not parse, UnknownValueError."""
    out: list[Pod] = []
    runtimes = [o for o in objects if o.group == TRAINER_GROUP and o.kind == RUNTIME_KINDS[0]]
    for runtime in runtimes:
        targets = sorted({cq for (ns, _), cq in queues.local_queues.items() if ns == runtime.namespace})
        raw_nodes = get(runtime.spec, "mlPolicy", "numNodes")
        nodes = max(_int(raw_nodes, 1), 1)
        for job_path, job in trainer_jobs(runtime):
            path = f"{job_path}.template.spec.template.spec"
            requests, fields = _template(get(job, "template", "spec", "template", "spec"), path)
            out += [Pod(runtime, f"{runtime.describe()} trainer pod", requests, fields, nodes, cq, nodes,
                        "spec.mlPolicy.numNodes", raw_nodes, serving=False) for cq in targets]
    for job in (o for o in objects if o.group == TRAINER_GROUP and o.kind == "TrainJob"):
        queue = get(job.labels, QUEUE_NAME_LABEL)
        override = get(job.spec, "trainer", "resourcesPerNode")
        raw_nodes = get(job.spec, "trainer", "numNodes")
        if not isinstance(queue, str) or (override is MISSING and raw_nodes is MISSING):
            continue
        cq = queues.cluster_queue_of(job.namespace, queue)
        named, _ = runtime_of(job, objects)  # its runtimeRef: kind ClusterTrainingRuntime unless it says otherwise
        if cq is None or named is None:
            continue  # other rules report a queue or runtime outside the stack
        nodes = max(_int(raw_nodes if raw_nodes is not MISSING else get(named.spec, "mlPolicy", "numNodes"), 1), 1)
        for job_path, rjob in trainer_jobs(named):
            spec = dict(as_map(get(rjob, "template", "spec", "template", "spec")).items())
            path = f"{named.describe()} {job_path}.template.spec.template.spec"
            if override is not MISSING:
                spec["containers"] = [{**dict(as_map(c).items()), "resources": override}
                                      if get(c, "name") == "node" else c for c in as_list(get(spec, "containers"))]
            requests, fields = _template(spec, path)
            if override is not MISSING:
                fields = {r: ("spec.trainer.resourcesPerNode", override) for r in fields}
            # numNodes from the runtime: the job's own pods (its resourcesPerNode) are reported at that field
            at = ("spec.trainer.numNodes", raw_nodes) if raw_nodes is not MISSING else (
                "spec.trainer.resourcesPerNode", override)
            out.append(Pod(job, f"{job.describe()} trainer pod", requests, fields, nodes, cq, nodes, *at,
                           serving=False))
    return out


@dataclass(frozen=True)
class _FlavorQuota:
    """One flavor of a ClusterQueue's resource group: its entries by resource, nominalQuota and nominal +
    borrowingLimit (infinite without a borrowingLimit in a cohort)."""

    flavor: str
    group: int
    entries: Mapping[str, QuotaEntry]
    nominal: Mapping[str, Decimal]
    usable: Mapping[str, Decimal]


def _flavor_quotas(cq: KubeObject) -> list[_FlavorQuota]:
    """The flavors of a ClusterQueue, in spec order. Raises UnknownValueError."""
    in_cohort = get(cq.spec, "cohortName") not in (MISSING, "", None)
    found: dict[tuple[int, str], dict[str, QuotaEntry]] = {}
    for entry in quota_entries(cq):
        found.setdefault((entry.group, entry.flavor), {})[entry.resource] = entry
    out = []
    for (group, flavor), entries in found.items():
        nominal = {r: parse(e.field("nominalQuota")) or Decimal(0) for r, e in entries.items()}
        usable = {}
        for r, e in entries.items():
            raw = e.field("borrowingLimit")
            usable[r] = nominal[r] + ((_INFINITY if in_cohort else Decimal(0)) if raw is MISSING
                                      else (parse(raw) or Decimal(0)))
        out.append(_FlavorQuota(flavor, group, entries, nominal, usable))
    return out


def _assignable(pod: Mapping[str, Decimal], flavors: Sequence[_FlavorQuota], count: int = 1) -> list[_FlavorQuota]:
    """The flavors Kueue may assign `count` pods of `pod` (Kueue v0.19.2 `pkg/scheduler/flavorassigner`): per resource
    group covering requested resources, each flavor whose nominalQuota + borrowingLimit holds them all."""
    out = []
    for fq in flavors:
        asked = {r: a * count for r, a in pod.items() if a > 0 and r in fq.entries}
        if asked and all(a <= fq.usable[r] for r, a in asked.items()):
            out.append(fq)
    return out


def _one_pod(pod: Pod, fq: _FlavorQuota, pools: Sequence[NodePool], judged: frozenset[str]) -> list[Violation]:
    """Finding 1 for one pod shape and one flavor it may get."""
    node, short = closest_node(pod.requests, pools, judged)
    if not short and node is not None:
        return []
    if node is None:
        return []  # a flavor with no nodes: COHORT_NOMINAL_WITHIN_CAPACITY reports it
    resource = sorted(short)[0]
    where, raw = pod.fields.get(resource, ("", MISSING))
    asked = {r: pod.requests[r] for r in sorted(pod.requests) if pod.requests[r] > 0 and r in judged}
    have = ", ".join(f"'{r}' {show(node.capacity.get(r, Decimal(0)), _binary(r))}" for r in asked)
    missing = ", ".join(f"'{r}' {show(need, _binary(r))} > {show(cap, _binary(r))}" for r, (need, cap)
                        in sorted(short.items()))
    return [violation(
        pod.obj, PODS_FIT_NODES.name, where, raw,
        f"one {pod.name} asks for {_amounts(asked)} on one node, and no node of flavor '{fq.flavor}' has that "
        f"(the closest, pool '{node.name}', has {have} per node: {missing}); Kueue admits it by quota in flavor "
        f"'{fq.flavor}' of ClusterQueue '{pod.cluster_queue}' and the kube-scheduler leaves it Pending for ever "
        "(NodeResourcesFit: Insufficient), holding that quota",
        f"request at most {', '.join(f'{show(cap, _binary(r))} of {r!r}' for r, (_, cap) in sorted(short.items()))}"
        f" per pod (split the work over more pods), or add a node pool whose nodes have "
        f"{', '.join(f'{show(need, _binary(r))} of {r!r}' for r, (need, _) in sorted(short.items()))} and carry "
        f"the nodeLabels of flavor '{fq.flavor}'")]


def _job_pods(pod: Pod, fq: _FlavorQuota, pools: Sequence[NodePool], judged: frozenset[str]) -> list[Violation]:
    """Finding 2: numNodes trainer pods of one job on the flavor's nodes."""
    if pod.nodes <= 1:
        return []
    fits = homogeneous_capacity(pod.requests, pools, judged)
    if fits is None or fits >= pod.nodes or fits == 0:
        return []  # fits == 0: finding 1 says the pod fits no node
    return [violation(
        pod.obj, PODS_FIT_NODES.name, pod.nodes_field, pod.nodes_value,
        f"numNodes {pod.nodes} trainer pods of {_amounts(pod.requests)} each fit the quota of flavor "
        f"'{fq.flavor}' of ClusterQueue '{pod.cluster_queue}', which Kueue admits at once, but the nodes of that "
        f"flavor hold only {fits} of them together, so the rest stay Pending and the job never starts",
        f"lower numNodes to at most {fits}, or add nodes to the flavor's pools")]


def _blocking_text(witness: Any) -> str:
    placed = "; ".join(f"a node of pool '{pool}' holds {len(names)} pod(s) ({', '.join(sorted(set(names)))})"
                       for pool, names in witness.placed) or "nothing placed"
    return placed


def _share_pods(fq: _FlavorQuota, named: bool = False) -> list[Shape]:
    """Inference's nominalQuota in a flavor when the stack declares no serving pod: as many pods as it has GPUs (the
    extended resources with a "/" in their name, e.g. nvidia.com/gpu; the first with a whole positive quota), each
    with one GPU and the quota's per-GPU share of every other resource (cpu, memory: what a replica sized by the
    quota asks). Empty when the flavor has no such resource. The quota promises that much per GPU; on nodes with less
    per GPU, some GPUs can never be used with it."""
    gpu = next((r for r in sorted(fq.nominal) if "/" in r and fq.nominal[r] >= 1
                and fq.nominal[r] == fq.nominal[r].to_integral_value()), None)
    if gpu is None:
        return []
    count = int(fq.nominal[gpu])
    # the share rounded down to a milli-unit (a quantity's finest step): never more than the quota holds
    share = {r: (Decimal(1) if r == gpu else (v / count).quantize(Decimal("0.001"), rounding=ROUND_FLOOR))
             for r, v in fq.nominal.items() if r == gpu or "/" not in r}
    where = f" of flavor '{fq.flavor}'" if named else ""
    return [Shape(f"1-GPU pod of the nominalQuota's per-GPU share{where} (no serving workload declares its pods)",
                  share, count)]


def _reported_at(group: Sequence[_FlavorQuota], quota: Mapping[str, Decimal], target: Shape
                 ) -> tuple[str, _FlavorQuota, QuotaEntry]:
    """Where a packing finding is reported: the resource of ``quota`` the stranded ``target`` asks for (a GPU first,
    else its first requested resource, else the quota's first), the group's first flavor that has it, and its
    quota entry."""
    resource = next((r for r in sorted(quota) if "/" in r and target.requests.get(r, Decimal(0)) > 0),
                    next((r for r in sorted(quota) if target.requests.get(r, Decimal(0)) > 0), sorted(quota)[0]))
    holder = next((fq for fq in group if resource in fq.entries), group[0])
    return resource, holder, holder.entries[resource]


def _largest_safe(high: Decimal, safe: Callable[[Decimal], bool], least: Decimal = Decimal(0)) -> Decimal:
    """The largest whole quota in [``least``, ``high``) for which ``safe`` holds (binary search; 0 when none): the
    verdict is monotone there, a lower quota admits fewer pods. ``least`` (rounded up to a whole quota) is the
    smallest quota worth naming (one pod of the stranded shape); when it is not safe, none above it is."""
    low = least.to_integral_value(ROUND_CEILING)
    if low > 0 and (low >= high or not safe(low)):
        return Decimal(0)
    while high - low > 1:
        mid = ((low + high) / 2).to_integral_value()
        if safe(mid):
            low = mid
        else:
            high = mid
    return low


def _inference_packing(cq: KubeObject, group: Sequence[_FlavorQuota], pods: Sequence[Pod],
                       pools: Sequence[NodePool], judged: frozenset[str],
                       borrowers: Optional[_Borrowers] = None) -> list[Violation]:
    """Findings 3 and 4 for a group of flavors of an inference ClusterQueue that share nodes (one flavor, or several
    whose nodeLabels select common pools: their pods meet on those nodes, so they are placed together, on the union
    of their pools, within the sum of their nominalQuotas). Without any declared serving pod (``pods`` empty), each
    flavor's nominalQuota as pods of one GPU with its per-GPU share (``_share_pods``). Finding 4 places the pods of
    the ClusterQueues that borrow in those flavors (``borrowers``) beside inference's, within the cohort's quota, and
    asks whether an inference pod can be left with no node. The violation is at the first flavor's nominalQuota."""
    quota: dict[str, Decimal] = {}
    for fq in group:
        for r, v in fq.nominal.items():
            quota[r] = quota.get(r, Decimal(0)) + v
    shapes = []
    for pod in pods:
        if all(any(a > fq.nominal.get(r, a) for r, a in pod.requests.items() if r in fq.entries) for fq in group):
            continue  # a pod that never fits these flavors' quota is never admitted there
        shapes.append(Shape(pod.name, dict(pod.requests), pod.cap))
    if not pods:
        shapes = [shape for fq in group for shape in _share_pods(fq, len(group) > 1)]
    if not shapes or not pools:
        return []
    if (len(group) > 1 or not pods) and any(quota[r] > sum((pool.total(r) for pool in pools), Decimal(0))
                                            for r in quota if r in judged):
        return []  # their quota exceeds their nodes even summed: COHORT_NOMINAL_WITHIN_CAPACITY reports it
    witness, decided = blocking_placement(shapes, pools, quota, judged)
    if not pods and witness is None:  # a share pod that fits no node at all (finding 1 judges declared pods only)
        wide = next((shape for shape in shapes if closest_node(shape.requests, pools, judged)[1]), None)
        if wide is not None:
            witness, decided = Blocking((), wide), True
    if decided and witness is None and borrowers is not None and borrowers.shapes:
        return _reclaim_packing(cq, group, shapes, quota, borrowers, pools, judged)
    if decided and witness is None:
        return []
    target = witness.stranded if witness is not None else shapes[0]
    resource, holder, entry = _reported_at(group, quota, target)
    names = " and ".join(f"'{fq.flavor}'" for fq in group)
    which = f"flavor {names}" if len(group) == 1 else f"flavors {names} (their nodeLabels select common nodes)"
    if witness is None:
        return [violation(
            cq, PODS_FIT_NODES.name, f"{entry.path}.nominalQuota", entry.field("nominalQuota"),
            f"whether every pod inference may run within the nominalQuota of {which} finds a node could not be "
            "decided within the search budget, so the policy fails closed",
            "give the flavor a Topology (spec.topologyName: Kueue then checks per-node fit at admission) and lower "
            "the nominalQuota to whole nodes' worth of pods, or declare fewer pod shapes")]
    def safe(mid: Decimal) -> bool:
        trial, ok = blocking_placement(shapes, pools, {**quota, resource: mid}, judged)
        return trial is None and ok

    most = max(_largest_safe(quota[resource], safe) - (quota[resource] - holder.nominal.get(resource, Decimal(0))),
               Decimal(0))
    return [violation(
        cq, PODS_FIT_NODES.name, f"{entry.path}.nominalQuota", entry.field("nominalQuota"),
        f"the nominalQuota of {which} admits pods the nodes cannot all hold: the kube-scheduler binds them one at a "
        f"time on any node with room, and after {_blocking_text(witness)}, one more {target.name} "
        f"({_amounts(target.requests)}), still within the quota, fits no node and stays Pending while training is "
        "preempted for nothing",
        f"lower the nominalQuota of {resource!r} in flavor '{holder.flavor}' to at most {show(most, _binary(resource))}"
        + (", or give the flavors nodeLabels that select disjoint nodes" if len(group) > 1 else "")
        + ", or size the pods to divide the nodes (or add nodes), or give the flavor a Topology (spec.topologyName) "
          "so that Kueue checks per-node fit before it admits")]


@dataclass(frozen=True)
class _Borrowers:
    """The pods that other ClusterQueues of inference's cohort may run in a group of inference's flavors (training
    borrowing inference's idle quota), as search shapes capped by what each may hold, and those ClusterQueues'
    own nominalQuota in the group (resource -> base units), which the cohort adds to inference's."""

    shapes: Sequence[Shape]
    nominal: Mapping[str, Decimal]


def _borrowers(name: str, group: Sequence[_FlavorQuota], pods: Sequence[Pod], queues: QueueIndex,
               flavors: Mapping[str, Sequence[_FlavorQuota]]) -> _Borrowers:
    """The `_Borrowers` of inference ClusterQueue `name` in `group`: every other ClusterQueue with the same cohortName
    that has quota (nominal or borrowable) in one of the group's flavors. Its declared pods (trainer pods of its
    TrainingRuntimes and TrainJobs, serving pods) each become a shape capped by nominal + borrowingLimit summed over
    the group (a TrainJob can be submitted many times: the cap is the quota's, not numNodes; a pod the quota can
    never hold is left out; the same pods of several borrowers, a TrainingRuntime of a namespace whose LocalQueues
    lead to several ClusterQueues, one shape whose cap is the sum of theirs; two trainer jobs of one runtime of
    other requests, two shapes); a borrower with no declared pod at all is judged as 1-GPU pods of inference's per-GPU
    share (``_share_pods``), the smallest GPU pod it may run. Returns empty shapes when inference has no cohort."""
    cohort = get(queues.cluster_queues[name].spec, "cohortName")
    if not isinstance(cohort, str) or not cohort:
        return _Borrowers((), {})
    names = {fq.flavor for fq in group}
    total = {r: sum((fq.nominal.get(r, Decimal(0)) for fq in group), Decimal(0))
             for r in {r for fq in group for r in fq.nominal}}
    shapes: list[Shape] = []
    nominal: dict[str, Decimal] = {}
    for other in sorted(queues.cluster_queues):
        if other == name or get(queues.cluster_queues[other].spec, "cohortName") != cohort:
            continue
        mine = [fq for fq in flavors.get(other, ()) if fq.flavor in names]
        usable: dict[str, Decimal] = {}
        for fq in mine:
            for r, v in fq.usable.items():
                usable[r] = usable.get(r, Decimal(0)) + v
            for r, v in fq.nominal.items():
                nominal[r] = nominal.get(r, Decimal(0)) + v
        if not any(v > 0 for v in usable.values()):
            continue
        declared = [p for p in pods if p.cluster_queue == other]
        found = [Shape(p.name, dict(p.requests), 0) for p in declared if _assignable(p.requests, mine)] if declared \
            else [
            Shape(f"1-GPU pod of ClusterQueue '{other}' (no TrainingRuntime or workload declares its pods)",
                  dict(s.requests), 0) for fq in group[:1] for s in _share_pods(_FlavorQuota(
                      fq.flavor, fq.group, fq.entries, total, total))]
        own: dict[tuple[str, tuple[tuple[str, Decimal], ...]], Shape] = {}
        for shape in found:
            room = {r: min(usable.get(r, Decimal(0)), total.get(r, Decimal(0)) + nominal.get(r, Decimal(0)))
                    for r in usable}
            caps = [int((room[r] / a).to_integral_value(ROUND_FLOOR)) for r, a in shape.requests.items()
                    if a > 0 and r in room and room[r] != _INFINITY]
            cap = min(caps, default=0)
            if cap > 0:  # one shape of this queue's, however many of its jobs make it (a runtime's trainer jobs)
                own.setdefault(_shape_key(shape), Shape(shape.name, shape.requests, cap))
        for key, shape in own.items():
            # the same pods queued to another ClusterQueue too (a TrainingRuntime of a namespace whose LocalQueues
            # lead to several): each queue runs its own, up to its own quota
            same = next((i for i, s in enumerate(shapes) if _shape_key(s) == key), None)
            if same is None:
                shapes.append(shape)
            else:
                shapes[same] = Shape(shape.name, shape.requests, shapes[same].cap + shape.cap)
    return _Borrowers(tuple(shapes), nominal)


def _shape_key(shape: Shape) -> tuple[str, tuple[tuple[str, Decimal], ...]]:
    """A borrower shape's identity: its name and its requests (a runtime's trainer jobs share a name)."""
    return shape.name, tuple(sorted(shape.requests.items()))


def _reclaim_packing(cq: KubeObject, group: Sequence[_FlavorQuota], shapes: Sequence[Shape],
                     quota: Mapping[str, Decimal], borrowers: _Borrowers, pools: Sequence[NodePool],
                     judged: frozenset[str]) -> list[Violation]:
    """Finding 4: inference's pods ``shapes`` within its nominalQuota ``quota`` beside the borrowers' pods, all within
    the cohort's quota (inference's plus the borrowers' nominal), where only an inference pod left with no node
    counts; inference's pods stay within ``quota`` (`blocking_placement`'s ``own``: with borrowingLimit 0 Kueue never
    admits them beyond it, even when the borrowers' own quota is idle). Kueue admits the inference Workload by quota
    and picks the borrowers it preempts by quota too, never by node (Kueue v0.19.2
    `pkg/scheduler/preemption/preemption.go`: candidates ordered by priority and admission time, the minimal set
    whose removal makes the quota fit; kueue#5243): any placement within the cohort's quota that leaves every node
    without room for an inference pod which still fits inference's quota is one that Kueue reaches, with or without
    preempting (a reclaim that frees quota on the wrong nodes ends in such a placement). The fix's quota is the
    largest safe one of at least one stranded pod's worth (a lower one is "safe" only by admitting none)."""
    cohort = {r: quota.get(r, Decimal(0)) + borrowers.nominal.get(r, Decimal(0))
              for r in set(quota) | set(borrowers.nominal)}
    every = list(shapes) + list(borrowers.shapes)
    strandable = [True] * len(shapes) + [False] * len(borrowers.shapes)
    witness, decided = blocking_placement(every, pools, cohort, judged, strandable=strandable, own=quota)
    if decided and witness is None:
        return []
    target = witness.stranded if witness is not None else shapes[0]
    resource, holder, entry = _reported_at(group, quota, target)
    names = " and ".join(f"'{fq.flavor}'" for fq in group)
    which = f"flavor {names}" if len(group) == 1 else f"flavors {names}"
    kinds = ", ".join(f"{s.name} ({_amounts(s.requests)})" for s in borrowers.shapes)
    if witness is None:
        return [violation(
            cq, PODS_FIT_NODES.name, f"{entry.path}.nominalQuota", entry.field("nominalQuota"),
            f"whether every pod inference may run within the nominalQuota of {which} still finds a node beside the "
            f"pods that borrow its idle quota ({kinds}) could not be decided within the search budget, so the "
            "policy fails closed",
            "size the borrowers' pods as whole multiples of inference's pod, or lower the nominalQuota to whole "
            "nodes' worth of inference pods")]
    def safe(mid: Decimal) -> bool:
        trial_cohort = {**cohort, resource: mid + borrowers.nominal.get(resource, Decimal(0))}
        trial, ok = blocking_placement(every, pools, trial_cohort, judged, strandable=strandable,
                                       own={**quota, resource: mid})
        return trial is None and ok

    # at least one stranded pod's worth: a lower quota is "safe" only because it admits no such pod at all
    most = max(_largest_safe(quota[resource], safe, target.requests.get(resource, Decimal(0)))
               - (quota[resource] - holder.nominal.get(resource, Decimal(0))), Decimal(0))
    room = min((int((cohort[r] / a).to_integral_value(ROUND_FLOOR)) for r, a in target.requests.items()
                if a > 0 and r in cohort), default=0)
    alike = [Shape(s.name, target.requests, room) for s in borrowers.shapes]  # the borrowers sized like the target
    resized, settled = blocking_placement(list(shapes) + alike, pools, cohort, judged, strandable=strandable,
                                          own=quota)
    resize = (f"size the borrowers' pods (the TrainingRuntime's trainer resources, a TrainJob's resourcesPerNode) as "
              f"whole multiples of one {target.name} ({_amounts(target.requests)}), or "
              if settled and resized is None else "")
    return [violation(
        cq, PODS_FIT_NODES.name, f"{entry.path}.nominalQuota", entry.field("nominalQuota"),
        f"training borrows the idle nominalQuota of {which} with pods of other shapes ({kinds}), and Kueue picks the "
        "workloads it preempts to reclaim that quota by quota, not by node (kueue#5243): after "
        f"{_blocking_text(witness)}, one more {target.name} ({_amounts(target.requests)}), within inference's "
        "nominalQuota, fits no node, so it is admitted and stays Pending although training gave back its quota",
        f"{resize}lower the nominalQuota of {resource!r} in flavor '{holder.flavor}' to at most "
        f"{show(most, _binary(resource))}, or add nodes")]


def _sharing(flavors: Sequence[_FlavorQuota], nodes_of: Mapping[str, Optional[list[NodePool]]]
             ) -> list[tuple[list[_FlavorQuota], list[NodePool]]]:
    """The flavors (with known nodes) split into groups that share pools, transitively, each with the union of its
    flavors' pools (by pool name, first seen order); flavor order kept."""
    groups: list[tuple[list[_FlavorQuota], dict[str, NodePool]]] = []
    for fq in flavors:
        mine = {pool.name: pool for pool in nodes_of.get(fq.flavor) or ()}
        if not mine:
            continue
        joined = [g for g in groups if set(g[1]) & set(mine)]
        merged_flavors = [f for g in joined for f in g[0]] + [fq]
        merged_pools: dict[str, NodePool] = {}
        for g in joined:
            merged_pools.update(g[1])
        merged_pools.update(mine)
        groups = [g for g in groups if not any(g is j for j in joined)] + [(merged_flavors, merged_pools)]
    order = {fq.flavor: i for i, fq in enumerate(flavors)}
    return sorted(((sorted(fs, key=lambda f: order[f.flavor]), list(ps.values())) for fs, ps in groups),
                  key=lambda g: order[g[0][0].flavor])


def check_pods_fit_nodes(objects: Iterable[KubeObject], pools: Sequence[NodePool],
                         inference_names: Iterable[str]) -> list[Violation]:
    """PODS_FIT_NODES over the whole stack (see the module docstring).

    Args:
        objects: every Kubernetes object of the stack. pools: the cluster's node pools (`NODE_POOLS`).
        inference_names: the inference ClusterQueues (`roles.inference_queue_names`).
    Returns:
        Violations: at the pod's request field when one pod fits no node of a flavor it may get; at numNodes when a
        job's pods do not fit the flavor's nodes together; at an inference ClusterQueue's nominalQuota when pods it
        admits can be stranded; fail-closed ones for values unknown at preview.
    """
    objects = list(objects)
    if not pools:
        return []  # no nodes declared: COHORT_NOMINAL_WITHIN_CAPACITY fails every quota
    judged = judged_resources(pools)
    queues = QueueIndex.build(objects)
    nodes_of = flavor_pools(objects, pools)
    found: list[Violation] = []
    pods: list[Pod] = []
    for obj in objects:
        if not is_serving_workload(obj):
            continue

        def read(obj: KubeObject = obj) -> list[Violation]:
            queue = queue_of(obj)
            cq = queues.cluster_queue_of(obj.namespace, queue) if isinstance(queue, str) else None
            if cq is None or cq not in queues.cluster_queues:
                return []
            try:
                pods.extend(_serving_pods(obj, cq))
            except ValueError:
                return []  # the quantities rule reports it
            return []

        found += guarded(obj, read)
    try:
        pods += _trainer_pods(objects, queues)
    except (ValueError, UnknownValueError):
        pass  # the trainer rules report unreadable runtimes (fail closed there)
    flavors: dict[str, list[_FlavorQuota]] = {}
    for name, cq in queues.cluster_queues.items():
        try:
            flavors[name] = _flavor_quotas(cq)
        except UnknownValueError as err:
            found.append(unknown_violation(cq, err))
    for pod in pods:
        for fq in _assignable(pod.requests, flavors.get(pod.cluster_queue, ())):
            selected = nodes_of.get(fq.flavor)
            if not selected:
                continue  # unknown or no nodes: COHORT_NOMINAL_WITHIN_CAPACITY reports it
            found += _one_pod(pod, fq, selected, judged)
        for fq in _assignable(pod.requests, flavors.get(pod.cluster_queue, ()), pod.nodes):
            selected = nodes_of.get(fq.flavor)
            if selected:
                found += _job_pods(pod, fq, selected, judged)
    for name in sorted(set(inference_names)):
        inference = queues.cluster_queues.get(name)
        if inference is None:
            continue
        serving = [p for p in pods if p.serving and p.cluster_queue == name]
        for group, selected in _sharing(flavors.get(name, ()), nodes_of):
            found += _inference_packing(inference, group, serving, selected, judged,
                                        _borrowers(name, group, pods, queues, flavors))
    return _once(found)


def _once(found: list[Violation]) -> list[Violation]:
    """Each (object, field, rule) once (a runtime judged for several ClusterQueues, a pod for several flavors)."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for v in found:
        key = (v.subject, v.field, v.rule)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


def check_pods_fit_nodes_options(objects: Sequence[KubeObject], options: Mapping[str, Any]) -> list[Violation]:
    """The rule as the book calls it: the nodes from `nodePools` (else the legacy `capacity` as one pool; unusable
    pools are COHORT_NOMINAL_WITHIN_CAPACITY's to report), the inference ClusterQueues from the role options."""
    raw = NODE_POOLS.read(options)
    pools, _ = parse_node_pools(list(raw)) if raw else legacy_pool(LEGACY_CAPACITY.read(options) or {})
    return check_pods_fit_nodes(objects, pools, inference_queue_names(objects, options))


PODS_FIT_NODES: Declaration = Declaration(
    name="pods-fit-nodes",
    description="Every pod Kueue may admit fits one node of the pools its flavor selects, a job's pods fit them "
                "together, and no order of placement, nor training's pods beside them, strands a pod inference "
                "admits within its nominalQuota.",
    promise=Promise.GPUS_EXIST, level=Level.MANDATORY, scope=Scope.STACK,
    check=check_pods_fit_nodes_options,
    options=(NODE_POOLS, LEGACY_CAPACITY, *ROLE_OPTIONS))
