"""What holds the Kueue objects an ``up`` or a ``destroy`` deletes, said before the engine deletes them.

Kueue v0.19.2 keeps two kinds this stack registers behind the finalizer ``kueue.x-k8s.io/resource-in-use``
(apis/kueue/v1beta2/constants.go ``ResourceInUseFinalizerName``, added by pkg/webhooks/clusterqueue_webhook.go and
resourceflavor_webhook.go, and by the controllers as a fallback):

- a **ClusterQueue** is released only when no workload reserves quota in it (pkg/controller/core/
  clusterqueue_controller.go ``Reconcile``: ``r.cache.ClusterQueueEmpty``). A workload reserves quota while its
  ``QuotaReserved`` condition is True (pkg/workload/workload.go ``HasQuotaReservation``), ``status.admission.
  clusterQueue`` naming the queue;
- a **ResourceFlavor** is released only when no ClusterQueue lists it in ``spec.resourceGroups[].flavors``
  (pkg/controller/core/resourceflavor_controller.go ``Reconcile``: ``r.cache.ClusterQueuesUsingFlavor``,
  pkg/cache/scheduler/clusterqueue.go ``flavorInUse``).

LocalQueue, Cohort and WorkloadPriorityClass carry no finalizer (localqueue_controller.go and cohort_controller.go
add none): deleting or replacing them never waits. AdmissionCheck and Topology have the same finalizer, but the stack
registers neither. One kind of another controller does the same: Kubeflow Trainer (v2.0 on, kubeflow/trainer#2608;
v2.2.1 here) keeps a **TrainingRuntime** behind ``trainer.kubeflow.org/resource-in-use`` while a TrainJob of its
namespace names it in ``spec.runtimeRef`` (kind TrainingRuntime; pkg/controller/trainingruntime_controller.go,
``ResourceInUseFinalizerName`` in pkg/constants). A TrainJob that Kueue evicted (``stopPolicy: HoldAndDrain``) is only
suspended: it still names the runtime, so the runtime's delete waits while the ClusterQueue is already released. So
a ``destroy``, or an ``up`` that renames or replaces a ClusterQueue or a ResourceFlavor, while training runs waits
until the provider's delete times out, and leaves the queue Terminating (Kueue's troubleshooting guide, "deleting a
ClusterQueue"; kueue#2921).

What the run deletes comes from the engine's own steps (``deletions``: the resource pre-events of the preview that
``deploy`` runs before ``up``, or of ``preview_destroy`` before ``destroy``), so a rename, a replacement, a resource
moved to another component and a destroy of an older state are all seen as the engine will do them. ``holders``
judges them against the live queues and workloads (pure); ``read`` is the one cluster read (two lists, each bounded
by a timeout); ``message`` says what holds each object and what to do. The wait itself is bounded too: the stack's
ClusterQueues and ResourceFlavors are registered with a delete timeout of ``RELEASE_WAIT_S``
(components/model/kueue.py), and ``unreleased`` finds, in a failed run's engine events, the deletes that ended there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from pulumi.automation import EngineEvent, OpType

from kueue_cohorts.components.model.kueue import RELEASE_WAIT_S

__all__ = ["RESOURCE_IN_USE", "FINALIZED_KINDS", "Deletion", "Steps", "deletions", "holders", "message", "read",
           "unreleased", "timeout_line", "timeout_message", "Live"]

RESOURCE_IN_USE = "kueue.x-k8s.io/resource-in-use"
TRAINER_RESOURCE_IN_USE = "trainer.kubeflow.org/resource-in-use"
GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
TRAINER_GROUP, TRAINER_VERSION = "trainer.kubeflow.org", "v1alpha1"
#: The kinds of the stack whose deletion a controller holds back while they are in use: Kueue's RESOURCE_IN_USE on
#: ClusterQueue and ResourceFlavor, the Trainer's TRAINER_RESOURCE_IN_USE on TrainingRuntime (module docstring).
FINALIZED_KINDS = ("ClusterQueue", "ResourceFlavor", "TrainingRuntime")
#: The kinds whose deletion the steps report (the finalized ones are judged; the others never wait).
QUEUE_KINDS = ("ClusterQueue", "ResourceFlavor", "LocalQueue", "Cohort", "TrainingRuntime")
#: Steps that physically delete the old object (a replacement's ``replace`` step precedes its ``delete-replaced``).
DELETING_OPS = (OpType.DELETE, OpType.DELETE_REPLACED, OpType.REPLACE)
#: Steps that write a ClusterQueue's new spec.
WRITING_OPS = (OpType.CREATE, OpType.UPDATE, OpType.CREATE_REPLACEMENT, OpType.SAME, OpType.IMPORT)
SHOWN = 10
"""At most this many holders are named per object; the rest are counted."""


@dataclass(frozen=True, order=True)
class Deletion:
    """A Kueue object the run deletes: ``kind`` (one of QUEUE_KINDS), ``name``, ``namespace`` (LocalQueue only) and
    ``op``, the engine's step (``delete``: removed or renamed; ``replace`` / ``delete-replaced``: replaced)."""

    kind: str
    name: str
    namespace: Optional[str] = None
    op: str = OpType.DELETE.value

    def describe(self) -> str:
        """``ClusterQueue c12-training-cq`` (``LocalQueue ns/name``)."""
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"


@dataclass(frozen=True)
class Steps:
    """What the engine's steps do to the queue kinds: ``deleted`` (each object once, sorted) and ``queue_flavors``,
    the ResourceFlavor names each ClusterQueue the run writes will list (by ClusterQueue name)."""

    deleted: tuple[Deletion, ...] = ()
    queue_flavors: Mapping[str, frozenset[str]] = field(default_factory=dict)


def _kind(type_token: str) -> Optional[str]:
    """``ClusterQueue`` for ``kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue`` (any version; also
    ``kubernetes:trainer.kubeflow.org/<version>:TrainingRuntime``) when it is one of QUEUE_KINDS, else None."""
    match = re.fullmatch(r"kubernetes:(?:kueue\.x-k8s\.io|trainer\.kubeflow\.org)/[^:]+:(\w+)", type_token or "")
    return match.group(1) if match and match.group(1) in QUEUE_KINDS else None


def _object(state: Any) -> Mapping[str, Any]:
    """The object of a step's old or new state: its outputs (the live object as last read), else its inputs."""
    if state is None:
        return {}
    return state.outputs or state.inputs or {}


def _flavors(queue: Mapping[str, Any]) -> frozenset[str]:
    """The ResourceFlavor names a ClusterQueue object lists (``spec.resourceGroups[].flavors[].name``)."""
    groups = ((queue.get("spec") or {}).get("resourceGroups")) or []
    return frozenset(str(f.get("name")) for g in groups if isinstance(g, Mapping)
                     for f in (g.get("flavors") or []) if isinstance(f, Mapping) and f.get("name"))


def deletions(events: Iterable[EngineEvent]) -> Steps:
    """The Steps of a preview's engine ``events`` (Automation API ``on_event``; only resource pre-events count).

    A step of a queue kind (QUEUE_KINDS, any version of kueue.x-k8s.io) whose op is in DELETING_OPS deletes the
    object of its old state (``metadata.name`` / ``metadata.namespace`` of the outputs, else the inputs), unless the
    old state is ``retainOnDelete`` (the engine then only forgets it). A ClusterQueue step in WRITING_OPS records the
    flavors of its new inputs. Never raises on a step it does not know: it is left out."""
    found: dict[tuple[str, str, Optional[str]], Deletion] = {}
    writes: dict[str, frozenset[str]] = {}
    for event in events:
        pre = event.resource_pre_event
        if pre is None:
            continue
        step = pre.metadata
        kind = _kind(step.type)
        if kind is None:
            continue
        if step.op in DELETING_OPS and step.old is not None and not step.old.retain_on_delete:
            meta = _object(step.old).get("metadata") or {}
            if meta.get("name"):
                key = (kind, str(meta["name"]), meta.get("namespace"))
                found.setdefault(key, Deletion(*key, op=step.op.value))
        if kind == "ClusterQueue" and step.op in WRITING_OPS and step.new is not None:
            new = step.new.inputs or {}
            name = (new.get("metadata") or {}).get("name")
            if name:
                writes[str(name)] = _flavors(new)
    return Steps(tuple(sorted(found.values())), writes)


def _reserves_quota(workload: Mapping[str, Any]) -> bool:
    conditions = (workload.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "QuotaReserved" and c.get("status") == "True" for c in conditions)


def _workload(workload: Mapping[str, Any]) -> str:
    """``namespace/name``, with its owner (``(Job train)``) when it has one."""
    meta = workload.get("metadata") or {}
    owners = [o for o in meta.get("ownerReferences") or [] if o.get("kind") and o.get("name")]
    owner = f" ({owners[0]['kind']} {owners[0]['name']})" if owners else ""
    return f"{meta.get('namespace')}/{meta.get('name')}{owner}"


def _runtime_ref(trainjob: Mapping[str, Any]) -> tuple[str, str]:
    """(kind, name) of a TrainJob's ``spec.runtimeRef``; the kind defaults to ClusterTrainingRuntime, as the Trainer
    v2.2.1 API does (pkg/apis/trainer/v1alpha1/trainjob_types.go ``RuntimeRef.Kind``, default
    ``ClusterTrainingRuntime``)."""
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    return str(ref.get("kind") or "ClusterTrainingRuntime"), str(ref.get("name") or "")


def _trainjob(trainjob: Mapping[str, Any]) -> str:
    """``namespace/name (TrainJob, suspended)``: what the line names for a TrainJob that holds a runtime."""
    meta = trainjob.get("metadata") or {}
    suspended = ", suspended" if (trainjob.get("spec") or {}).get("suspend") else ""
    return f"{meta.get('namespace')}/{meta.get('name')} (TrainJob{suspended})"


def holders(steps: Steps, queues: Iterable[Mapping[str, Any]], workloads: Iterable[Mapping[str, Any]],
            trainjobs: Iterable[Mapping[str, Any]] = ()) -> dict[Deletion, list[str]]:
    """What keeps each object of ``steps.deleted`` from going (pure), only for the objects something holds.

    Args:
        steps: ``deletions(...)`` of the run. queues: the live ClusterQueue objects (every one of the cluster).
        workloads: the live Workload objects (all namespaces), as the API returns them.
        trainjobs: the live TrainJob objects (trainer.kubeflow.org, all namespaces; empty without a Trainer).
    Returns:
        Per held Deletion, sorted descriptions of its holders: for a ClusterQueue the workloads that reserve quota in
        it (``namespace/name (Job x)``); for a ResourceFlavor the ClusterQueues that will still list it when Kueue is
        asked to delete it (``ClusterQueue x``): every live one that lists it, but those this run deletes (they go
        first: they depend on the flavor) and those it rewrites without it; for a TrainingRuntime every TrainJob of
        its namespace whose ``spec.runtimeRef`` names it (``namespace/name (TrainJob, suspended)``), running or
        suspended alike. LocalQueue and Cohort never appear.
    """
    queues = list(queues)
    trainjobs = list(trainjobs)
    deleted_queues = {d.name for d in steps.deleted if d.kind == "ClusterQueue"}
    found: dict[Deletion, list[str]] = {}
    for deletion in steps.deleted:
        if deletion.kind == "ClusterQueue":
            names = [_workload(w) for w in workloads
                     if ((w.get("status") or {}).get("admission") or {}).get("clusterQueue") == deletion.name
                     and _reserves_quota(w)]
        elif deletion.kind == "ResourceFlavor":
            names = []
            for queue in queues:
                name = str((queue.get("metadata") or {}).get("name"))
                after = steps.queue_flavors.get(name, _flavors(queue))
                if name not in deleted_queues and deletion.name in _flavors(queue) and deletion.name in after:
                    names.append(f"ClusterQueue {name}")
        elif deletion.kind == "TrainingRuntime":
            names = [_trainjob(job) for job in trainjobs
                     if (job.get("metadata") or {}).get("namespace") == deletion.namespace
                     and _runtime_ref(job) == ("TrainingRuntime", deletion.name)]
        else:
            continue
        if names:
            found[deletion] = sorted(names)
    return found


def _object_lines(command: str, held: Mapping[Deletion, list[str]], shown: int) -> list[str]:
    """Per held object, what holds it: at most ``shown`` by name, then how many more."""
    lines = []
    for deletion, names in held.items():
        how = "replaced" if deletion.op != OpType.DELETE.value else (
            "deleted" if command == "destroy" else "removed or renamed")
        what = {"ClusterQueue": "admitted workloads", "TrainingRuntime": "named by"}.get(deletion.kind, "listed by")
        more = f" and {len(names) - shown} more" if len(names) > shown else ""
        lines.append(f"  {deletion.describe()} ({how}): {what} {', '.join(names[:shown])}{more}")
    return lines


def _flavor_fix(held: Mapping[Deletion, list[str]]) -> list[str]:
    """The ways out for held ResourceFlavors and TrainingRuntimes (the queues' own come first in each message)."""
    fixes = []
    if any(d.kind == "ResourceFlavor" for d in held):
        fixes.append("remove each ResourceFlavor from the resourceGroups of the ClusterQueues that list it, or keep "
                     "the flavor in the stack")
    runtimes = [d for d in held if d.kind == "TrainingRuntime"]
    if runtimes:
        first = runtimes[0]
        fixes.append(f"delete the TrainJobs that name each TrainingRuntime (kubectl delete trainjob -n "
                     f"{first.namespace} NAME; a suspended TrainJob, e.g. one that stopPolicy HoldAndDrain evicted, "
                     "still names it, and the Trainer keeps the runtime behind its "
                     f"{TRAINER_RESOURCE_IN_USE} finalizer until none does; the checkpoints stay on the volume), or "
                     "keep the runtime in the stack")
    return fixes


def _keeper(deletions: Iterable[Deletion]) -> str:
    """Who holds these objects back: ``Kueue``, ``the Trainer`` (TrainingRuntimes only) or ``Kueue and the Trainer``."""
    kinds = frozenset(d.kind == "TrainingRuntime" for d in deletions)
    return {frozenset({False}): "Kueue", frozenset({True}): "the Trainer"}.get(kinds, "Kueue and the Trainer")


def message(command: str, stack: str, held: Mapping[Deletion, list[str]], shown: int = SHOWN) -> list[str]:
    """The lines ``deploy`` prints instead of running ``command`` (``up`` or ``destroy``) on ``stack``: per held
    object, what holds it (at most ``shown`` by name, then how many more), then the ways out, the queue's
    ``stopPolicy`` first (apis/kueue/v1beta2/clusterqueue_types.go ``StopPolicy``: HoldAndDrain evicts the admitted
    workloads). ``held``: ``holders(...)``, not empty."""
    finalizers = " and ".join(sorted({TRAINER_RESOURCE_IN_USE if d.kind == "TrainingRuntime" else RESOURCE_IN_USE
                                       for d in held}))
    keeper = _keeper(held)
    lines = [f"deploy: {command} --stack {stack} would wait for {keeper} to release {len(held)} object(s) it deletes, "
             f"which {'they keep' if ' and ' in keeper else 'it keeps'} while they are in use ({finalizers} "
             "finalizer):",
             *_object_lines(command, held, shown)]
    queues = [d.name for d in held if d.kind == "ClusterQueue"]
    fixes = []
    if queues:
        fixes.append("stop each ClusterQueue so Kueue evicts its workloads (kubectl patch clusterqueue "
                     f"{queues[0]} --type merge -p '{{\"spec\":{{\"stopPolicy\":\"HoldAndDrain\"}}}}'), or delete "
                     "or finish those workloads, or wait for them to finish")
    fixes += _flavor_fix(held)
    done = "nothing was destroyed" if command == "destroy" else "nothing was changed"
    lines.append(f"deploy: {done}. Fix: {'; '.join(fixes)}; then run {command} again "
                 "(docs/operations.md, \"Queues in use\")")
    return lines


def timeout_message(command: str, held: Mapping[Deletion, list[str]], shown: int = SHOWN) -> list[str]:
    """After a run stopped at the bounded wait (``unreleased``): per object still held, what holds it now, then the
    ways out. Deleting the workloads comes first here: the run deleted the LocalQueues before it reached their
    ClusterQueue, and Kueue v0.19.2 finds a stopped queue's workloads through its LocalQueues (pkg/controller/core/
    workload_controller.go ``queueReconcileForWorkloadsOfClusterQueue``), so stopping the queue may evict nothing
    now."""
    fixes = []
    if any(d.kind == "ClusterQueue" for d in held):
        fixes.append("delete or finish those workloads, or wait for them to finish (stopping the queue with "
                     "stopPolicy HoldAndDrain evicts them only through their LocalQueues, which this run may have "
                     "deleted already)")
    fixes += _flavor_fix(held)
    return [*_object_lines(command, held, shown),
            f"deploy: Fix: {'; '.join(fixes)}; then run {command} again (docs/operations.md, \"Queues in use\")"]


Live = tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]
"""The live ClusterQueues, Workloads and TrainJobs (``read``), in ``holders``' argument order."""


def read(config_file: Optional[str], context: Optional[str], timeout_seconds: float = 15.0) -> Live:
    """The live ClusterQueues, Workloads and TrainJobs (all namespaces) of the cluster of ``config_file`` (a kubeconfig
    path, or several joined with ``os.pathsep``; None: the client's default) and ``context``: three list calls, each
    bounded by ``timeout_seconds``. A cluster that does not serve TrainJobs (no Trainer: 404) has none. Raises any
    other client error (the caller decides what it means)."""
    api = config.new_client_from_config(config_file=config_file, context=context)
    custom = client.CustomObjectsApi(api)

    def items(group: str, version: str, plural: str) -> list[dict[str, Any]]:
        answer = custom.list_cluster_custom_object(group, version, plural, _request_timeout=timeout_seconds)
        return list(answer.get("items") or []) if isinstance(answer, dict) else []

    try:
        trainjobs = items(TRAINER_GROUP, TRAINER_VERSION, "trainjobs")
    except ApiException as err:
        if err.status != 404:
            raise
        trainjobs = []
    return items(GROUP, VERSION, "clusterqueues"), items(GROUP, VERSION, "workloads"), trainjobs


def unreleased(events: Iterable[EngineEvent]) -> list[Deletion]:
    """The ClusterQueues, ResourceFlavors and TrainingRuntimes a failed ``up`` or ``destroy`` set out to delete and did
    not (pure, over the run's engine ``events``): a deleting step of theirs (DELETING_OPS) whose resource then got an
    ``error`` diagnostic. That is how the kubernetes provider ends a delete that a finalizer held past the resources'
    delete timeout (``RELEASE_WAIT_S``; pulumi-kubernetes 4.25.0 provider/pkg/await/await.go ``Deletion``: the
    object stays, Terminating, and the provider has warned "finalizers might be preventing deletion"). Each object
    once, in the order of the steps."""
    events = list(events)
    failed = {e.diagnostic_event.urn for e in events
              if e.diagnostic_event is not None and e.diagnostic_event.severity == "error" and e.diagnostic_event.urn}
    found: dict[tuple[str, str], Deletion] = {}
    for event in events:
        pre = event.resource_pre_event
        if pre is None or pre.metadata.urn not in failed:
            continue
        for deletion in deletions([event]).deleted:
            if deletion.kind in FINALIZED_KINDS:
                found.setdefault((deletion.kind, deletion.name), deletion)
    return list(found.values())


def timeout_line(command: str, gone: Iterable[Deletion]) -> str:
    """The line that says the run stopped at the bounded wait for ``gone`` (``unreleased(...)``)."""
    gone = list(gone)
    names = ", ".join(d.describe() for d in gone)
    keeper = _keeper(gone)
    return (f"deploy: {command} waited up to {RELEASE_WAIT_S} s for {keeper} to release {names} and stopped there; "
            f"the object stays Terminating, and {keeper} deletes it by itself once nothing holds it (while "
            f"{'its controller runs' if ' and ' in keeper else 'its manager runs'})")
