"""TRAINING_RUNTIME_FITS_QUEUE (stack policy): a TrainJob of a training runtime can ever be admitted.

Kueue admits a TrainJob only when numNodes x the trainer pod's requests fit what its ClusterQueue can ever use:
nominalQuota + borrowingLimit per resource (a missing borrowingLimit means no limit), and only resources the
ClusterQueue covers (Kueue `pkg/scheduler/flavorassigner`: a PodSet requesting an uncovered resource fits no
flavor). Requests follow core/v1 defaulting: a limit without a request is the request. Our guide's runtime asked for
gpucores 50 and gpumem 4096 against 20 and 2048 and could never run.

Which ClusterQueue: the LocalQueues in the runtime's namespace (a TrainingRuntime serves TrainJobs of its own
namespace, which are queued through a LocalQueue there). A runtime in a namespace without a LocalQueue of this stack
is not judged. A TrainJob of the stack that overrides `spec.trainer.numNodes` or `spec.trainer.resourcesPerNode`
(Trainer v2.2.1: numNodes replaces mlPolicy.numNodes, resourcesPerNode replaces the `node` container's whole
resources, `pkg/runtime/framework/plugins/jobset/builder.go`) is judged the same way against the ClusterQueue behind
its own LocalQueue, so a TrainJob cannot ask for more than its queue can ever borrow.
"""
from __future__ import annotations

from decimal import ROUND_FLOOR, Decimal
from typing import Callable, Iterable, Optional

from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.objects import QUEUE_NAME_LABEL, KubeObject, guarded, unknown_violation, violation
from .vocabulary.quantity import parse, show
from .vocabulary.queues import QueueIndex
from .vocabulary.quota import QuotaEntry, flavor_fit, quota_entries
from .vocabulary.resources import effective_request_fields
from .vocabulary.trainer import RUNTIME_KINDS, TRAINER_GROUP, runtime_of, trainer_jobs
from .vocabulary.values import MISSING, UnknownValueError, Violation, as_list, get


def _ever_usable(cq: KubeObject) -> Callable[[QuotaEntry], Decimal]:
    """Per quota entry of `cq`: nominalQuota + borrowingLimit (unbounded without a borrowingLimit in a cohort)."""
    in_cohort = get(cq.spec, "cohortName") not in (MISSING, "")

    def usable(entry: QuotaEntry) -> Decimal:
        nominal = parse(entry.field("nominalQuota")) or Decimal(0)
        raw = entry.field("borrowingLimit")
        if raw is MISSING:
            return nominal + (Decimal("Infinity") if in_cohort else Decimal(0))
        return nominal + (parse(raw) or Decimal(0))
    return usable


def usable_quota(cq: KubeObject) -> dict[str, Decimal]:
    """What a ClusterQueue can ever use per resource: max over flavors of nominalQuota + borrowingLimit
    (`_ever_usable`: Decimal('Infinity') without a borrowingLimit while in a cohort). Raises UnknownValueError."""
    usable = _ever_usable(cq)
    out: dict[str, Decimal] = {}
    for entry in quota_entries(cq):
        out[entry.resource] = max(out.get(entry.resource, Decimal(0)), usable(entry))
    return out


def _node_requests(pod: object, pod_path: str, override: object = MISSING,
                   override_path: str = "") -> dict[str, tuple[Decimal, str, object]]:
    """resource -> (per-node request summed over containers, field path of the first contributor, raw value)
    (`resources.effective_request_fields`: a limit without a request is the request). `override`: a TrainJob's
    `spec.trainer.resourcesPerNode`, which replaces the whole resources of the container named `node` (Trainer
    v2.2.1 `pkg/runtime/framework/plugins/jobset/builder.go` Trainer(): WithResources), read at `override_path`."""
    totals: dict[str, tuple[Decimal, str, object]] = {}
    for i, container in enumerate(as_list(get(pod, "containers"))):
        path = f"{pod_path}.containers[{i}]"
        replaced = override is not MISSING and get(container, "name") == "node" and (
            get(override, "limits") is not MISSING or get(override, "requests") is not MISSING)
        try:
            if replaced:
                fields = {name: (value, override_path + where[len("resources"):], raw) for name, (value, where, raw)
                          in effective_request_fields({"resources": override}).items()}
            else:
                fields = effective_request_fields(container, path)
        except ValueError:
            continue  # not a quantity: the quantities rule reports it
        for name, (value, where, raw) in fields.items():
            before = totals.get(name)
            totals[name] = (value, where, raw) if before is None else (before[0] + value, before[1], before[2])
    return totals


def _num_nodes(raw: object) -> int:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or int(raw) < 1:
        return 1
    return int(raw)


def per_node_at_most(usable: Decimal, nodes: int, resource: str, binary: bool) -> str:
    """The largest per-node amount of `resource` that `nodes` nodes fit in `usable` (base units), as a quantity.

    Kueue counts a request in whole units of what it compares, rounding a fraction up (v0.19.2
    `pkg/resources/requests.go` ResourceValue: milli-units for cpu, `Quantity.MilliValue`; whole units for every other
    resource, `Quantity.Value`), so the amount is rounded down to 1m of cpu or one unit of anything else (a larger
    figure, such as 0.6666666666666666666666666667 of cpu for 2 cpu over 3 nodes, counts as 667m x 3 = 2001m and
    never fits). Returns e.g. "666m", "2", "2Gi" (binary resources in the largest exact binary unit)."""
    unit = Decimal("0.001") if resource == "cpu" else Decimal(1)
    per = (usable / nodes / unit).to_integral_value(rounding=ROUND_FLOOR) * unit
    if resource == "cpu" and per != per.to_integral_value():
        return f"{int(per * 1000)}m"
    return show(per, binary)


def _fit(subject: KubeObject, cqs: list[KubeObject], nodes: int, nodes_where: str,
         requests: dict[str, tuple[Decimal, str, object]], what: str) -> list[Violation]:
    """Violations when `nodes` x `requests` fit none of `cqs` (see check_training_runtime_fits_queue)."""
    usable: list[tuple[str, dict[str, Decimal]]] = []
    for cq in cqs:
        try:
            usable.append((cq.name, usable_quota(cq)))
        except UnknownValueError as err:
            return [unknown_violation(cq, err)]
    totals = {resource: per_node * nodes for resource, (per_node, _, _) in requests.items()}
    fits = [flavor_fit(cq, totals, _ever_usable(cq)) for cq in cqs]
    if any(fit.fits for fit in fits):
        return []
    # The closest queue: the one with the fewest resources missing (first on a tie).
    index = min(range(len(fits)), key=lambda i: len(fits[i].uncovered) + len(fits[i].short))
    fit, (_, quota) = fits[index], usable[index]
    several = len({e.flavor for e in quota_entries(cqs[index])}) > 1
    out: list[Violation] = []
    for resource, (per_node, where, raw) in sorted(requests.items()):
        total = totals[resource]
        if total == 0 or (resource not in fit.uncovered and resource not in fit.short):
            continue
        binary = resource in ("memory", "ephemeral-storage")
        names = ", ".join(f"'{n}'" for n, _ in usable)
        if resource in fit.uncovered and all(resource not in q for _, q in usable):
            rule = (f"the ClusterQueue {names} behind this namespace's LocalQueue covers no '{resource}', "
                    f"so Kueue can never admit {what}")
            fix = f"remove '{resource}' from the {'TrainJob' if subject.kind == 'TrainJob' else 'runtime'}, or " \
                  "cover it in the ClusterQueue"
        else:
            best, flavor = fit.short.get(resource, (quota.get(resource, Decimal(0)), ""))
            in_flavor = f" in its closest flavor '{flavor}' (no flavor holds the whole TrainJob)" \
                if several and flavor else ""
            rule = (f"{nodes_where} ({nodes}) x {show(per_node, binary)} = {show(total, binary)} of "
                    f"'{resource}' exceeds what ClusterQueue {names} can ever use{in_flavor}, "
                    f"{show(best, binary)} (nominalQuota + borrowingLimit), so Kueue can never admit {what}")
            lower = (f"lower it to at most {int(best // per_node)}" if where == nodes_where and per_node > 0
                     else f"lower it to at most {per_node_at_most(best, nodes, resource, binary)} per node")
            fix = (f"{lower}, or raise the training ClusterQueue's borrowingLimit"
                   + (f" in flavor '{flavor}'" if in_flavor else "") + " (within the cohort's capacity)")
        out.append(violation(subject, TRAINING_RUNTIME_FITS_QUEUE.name, where, raw, rule, fix))
    return out


def _queues_of_namespace(queues: QueueIndex, namespace: Optional[str]) -> list[KubeObject]:
    targets = sorted({cq for (ns, _), cq in queues.local_queues.items() if ns == namespace})
    return [queues.cluster_queues[name] for name in targets if name in queues.cluster_queues]


def _check_trainjob(trainjob: KubeObject, objects: list[KubeObject], queues: QueueIndex) -> list[Violation]:
    queue = get(trainjob.labels, QUEUE_NAME_LABEL)
    if not isinstance(queue, str):
        return []
    cq_name = queues.cluster_queue_of(trainjob.namespace, queue)
    if cq_name is None or cq_name not in queues.cluster_queues:
        return []  # not one of this stack's queues: WORKLOAD_PRIORITY_CLASS and the queue rules report it
    runtime, _ = runtime_of(trainjob, objects)
    if runtime is None:
        return []  # CHECKPOINT_SAFE_RUNTIME reports a runtime outside the stack (fail closed)
    trainer = get(trainjob.spec, "trainer")
    raw_nodes = get(trainer, "numNodes")
    resources = get(trainer, "resourcesPerNode")
    if raw_nodes is MISSING and resources is MISSING:
        return []  # the runtime's own numbers: judged on the runtime
    nodes = _num_nodes(raw_nodes if raw_nodes is not MISSING else get(runtime.spec, "mlPolicy", "numNodes"))
    where = "spec.trainer.numNodes" if raw_nodes is not MISSING else "numNodes"
    out: list[Violation] = []
    for job_path, job in trainer_jobs(runtime):
        pod = get(job, "template", "spec", "template", "spec")
        requests = _node_requests(pod, f"{runtime.describe()} {job_path}.template.spec.template.spec", resources,
                                  "spec.trainer.resourcesPerNode")
        if raw_nodes is not MISSING and resources is MISSING:
            requests = {r: (v, "spec.trainer.numNodes", raw_nodes) for r, (v, _, _) in requests.items()}
        out += _fit(trainjob, [queues.cluster_queues[cq_name]], nodes, where, requests, "this TrainJob")
    return out


def check_training_runtime_fits_queue(objects: Iterable[KubeObject]) -> list[Violation]:
    """TRAINING_RUNTIME_FITS_QUEUE over the whole stack.

    Args:
        objects: every Kubernetes object of the stack (TrainingRuntimes, TrainJobs, LocalQueues, ClusterQueues are
            read).
    Returns:
        One Violation per (runtime, resource) when the TrainJob fits none of the ClusterQueues behind the
        LocalQueues of the runtime's namespace (fits: per resource group, one flavor whose nominalQuota +
        borrowingLimit holds numNodes x every per-node request of the group; Kueue assigns one flavor per group):
        the resources uncovered by all, or missing in the closest queue's closest flavor. The same for every TrainJob
        of the stack that overrides `spec.trainer.numNodes` or `spec.trainer.resourcesPerNode`, against the
        ClusterQueue behind its own LocalQueue (label kueue.x-k8s.io/queue-name), with the runtime it names
        supplying what it does not override. Fail-closed violations for unknown values.
    """
    objects = list(objects)
    queues = QueueIndex.build(objects)
    found: list[Violation] = []
    for runtime in (o for o in objects if o.group == TRAINER_GROUP and o.kind in RUNTIME_KINDS[:1]):

        def check(runtime: KubeObject = runtime) -> list[Violation]:
            cqs = _queues_of_namespace(queues, runtime.namespace)
            if not cqs:
                return []
            nodes = _num_nodes(get(runtime.spec, "mlPolicy", "numNodes"))
            out: list[Violation] = []
            for job_path, job in trainer_jobs(runtime):
                pod_path = f"{job_path}.template.spec.template.spec"
                pod = get(job, "template", "spec", "template", "spec")
                out += _fit(runtime, cqs, nodes, "numNodes", _node_requests(pod, pod_path),
                            "a TrainJob of this runtime")
            return out

        found.extend(guarded(runtime, check))
    for trainjob in (o for o in objects if o.group == TRAINER_GROUP and o.kind == "TrainJob"):

        def check_trainjob(trainjob: KubeObject = trainjob) -> list[Violation]:
            return _check_trainjob(trainjob, objects, queues)

        found.extend(guarded(trainjob, check_trainjob))
    return found


TRAINING_RUNTIME_FITS_QUEUE: Declaration = Declaration(
    name="training-runtime-fits-queue",
    description="numNodes x a training runtime's per-node requests fit what its ClusterQueue can ever use.",
    promise=Promise.TRAINING_SURVIVES, level=Level.MANDATORY, scope=Scope.STACK,
    check=lambda objects, options: check_training_runtime_fits_queue(objects))
