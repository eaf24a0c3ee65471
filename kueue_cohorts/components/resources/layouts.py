"""The two cohort layouts of our guide as Pulumi components.

InferenceTrainingCohort (asymmetric): inference owns the GPU nominalQuota, never borrows and reclaims with Any;
training owns nothing and borrows the idle inference quota. SharedPoolCohort (symmetric): every tenant keeps a floor
and borrows the rest of the pool. Both register the objects the model rendered for them (components/model/render.py,
`RenderedLayout`), exactly as rendered, and add only lifecycle (parent, aliases, depends_on, replacement).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import pulumi

from kueue_cohorts.components.model.assembly import AssembledStack
from kueue_cohorts.components.model.render import RenderedLayout
from kueue_cohorts.components.resources.checkpoint import CheckpointVolume, CheckpointVolumeArgs
from kueue_cohorts.components.resources.judged import JudgedStack, StackInput, stack_settings_value
from kueue_cohorts.components.resources.manifest import ManifestResource
from kueue_cohorts.components.settings import InferenceTrainingSettings, SharedPoolSettings

NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
"""The type token of k8s.core.v1.Namespace (the alias target of a layout's NamespacePatch)."""


def layout_outputs(layout: RenderedLayout) -> dict[str, Any]:
    """A cohort component's outputs from its rendered layout: `cohort`, `clusterQueues`, `localQueues`
    ("namespace/name") and `workloadPriorityClasses`, each list sorted."""
    return {
        "cohort": layout.plan.cohort,
        "clusterQueues": sorted(cq.name for cq in layout.cluster_queues),
        "localQueues": sorted(f"{lq.namespace or ''}/{lq.name}" for lq in layout.local_queues),
        "workloadPriorityClasses": sorted(pc.name for pc in layout.priority_classes),
    }


class _CohortComponent(pulumi.ComponentResource):
    """Registers every object of one layout of a JudgedStack (but its services and runtimes) as children.

    Children, each the rendered manifest as it is (with the stack's Outputs applied, `JudgedStack.props`): the
    ResourceFlavors when no `flavor` is given (`{name}-flavor`, then `{name}-flavor-<flavor name>`), Namespaces
    (Create) or NamespacePatches (Label), the WorkloadPriorityClasses, the Cohort object (if any), the ClusterQueues
    (after the flavor), the LocalQueues (each after its ClusterQueue and namespace; replaced, not updated, when its
    ClusterQueue changes, since spec.clusterQueue is immutable) and the checkpoint volumes (CheckpointVolume, after
    their namespace).
    Namespaces: the rendered Create Namespace carries `kueue-cohorts/owner: <namespace_owner>` (the mark the
    namespace preflight checks on later runs); a Label namespace is rendered as a patch of the selector label only
    and registered as a NamespacePatch aliased to the Namespace of the same name, so that switching a layout from
    Create to Label turns the stack's Namespace into a patch in place (server-side apply under the same field
    manager drops every other field the stack wrote, the mark included) instead of deleting the namespace; deleting
    a NamespacePatch (destroy, a removed tenant) relinquishes its fields and keeps the namespace (provider 4.25.0
    `ssa.Relinquish`). External renders nothing.
    Attributes: `stack` (the JudgedStack), `layout` (the RenderedLayout, stand-ins in place of Outputs), `plan`,
    `flavors` (the ResourceFlavors registered here, else []), `cluster_queues` / `local_queues` /
    `priority_classes` / `namespaces` / `checkpoints` (dicts keyed by object name; local queues and checkpoints by
    "namespace/name"; a namespace given as an Output is keyed by its stand-in).
    """

    def __init__(self, type_token: str, name: str, stack: JudgedStack,
                 pick: Callable[[AssembledStack], Optional[RenderedLayout]], flavor: Optional[pulumi.Resource],
                 opts: Optional[pulumi.ResourceOptions]):
        super().__init__(type_token, name, None, opts)
        layout = pick(stack.assembled)
        assert layout is not None  # the subclasses check that the stack has their layout
        self.stack = stack
        self.layout = layout
        self.plan = layout.plan
        self._pick = pick
        stack.log_warnings(self)
        child = pulumi.ResourceOptions(parent=self)
        self.flavors: list[ManifestResource] = []
        if flavor is None:
            for index, item in enumerate(stack.assembled.rendered.flavors):
                flavor_name = f"{name}-flavor" if index == 0 else f"{name}-flavor-{item.name}"
                self.flavors.append(ManifestResource.of(flavor_name, item, child, props=stack.props(item)))
        self.namespaces: dict[str, pulumi.Resource] = {}
        for ns in layout.namespaces:
            # Create -> Label: the same resource, updated in place (never a delete of the Namespace).
            ns_opts = pulumi.ResourceOptions(parent=self, aliases=[pulumi.Alias(type_=NAMESPACE_TYPE)]) \
                if ns.patch else child
            self.namespaces[ns.name] = ManifestResource.of(f"{name}-ns-{ns.name}", ns, ns_opts, props=stack.props(ns))
        self.priority_classes = {
            pc.name: ManifestResource.of(f"{name}-wpc-{pc.name}", pc, child, props=stack.props(pc))
            for pc in layout.priority_classes
        }
        self.cohort_object = ManifestResource.of(f"{name}-cohort", layout.cohort, child,
                                                 props=stack.props(layout.cohort)) if layout.cohort else None
        flavors: list[pulumi.Resource] = [flavor] if flavor is not None else list(self.flavors)
        after_flavor = pulumi.ResourceOptions(parent=self, depends_on=flavors)
        self.cluster_queues = {
            cq.name: ManifestResource.of(f"{name}-cq-{cq.name}", cq, after_flavor, props=stack.props(cq))
            for cq in layout.cluster_queues
        }
        self.local_queues: dict[str, ManifestResource] = {}
        for lq in layout.local_queues:
            namespace = lq.namespace or ""
            deps: list[pulumi.Resource] = [self.cluster_queues[str(lq.manifest["spec"]["clusterQueue"])]]
            if namespace in self.namespaces:
                deps.append(self.namespaces[namespace])
            self.local_queues[f"{namespace}/{lq.name}"] = ManifestResource.of(
                f"{name}-lq-{namespace}-{lq.name}", lq,
                # spec.clusterQueue is immutable, so a new ClusterQueue replaces the LocalQueue; its name stays, so
                # the old one must go first (create-before-delete would fail: "already exists").
                pulumi.ResourceOptions(parent=self, depends_on=deps, replace_on_changes=["spec.clusterQueue"],
                                       delete_before_replace=True),
                props=stack.props(lq),
            )
        self.checkpoints: dict[str, CheckpointVolume] = {}
        plan = stack.settings.inference_training.training.checkpoint \
            if stack.settings.inference_training is not None else None
        for claim in layout.checkpoints:
            assert plan is not None  # only inferenceTraining renders checkpoint claims, from this key
            namespace = claim.namespace or ""
            deps = [self.namespaces[namespace]] if namespace in self.namespaces else []
            self.checkpoints[f"{namespace}/{claim.name}"] = CheckpointVolume(
                f"{name}-ckpt-{namespace}",
                CheckpointVolumeArgs(namespace=stack.value_of(namespace), settings=plan,
                                     storage_class_name=stack.value_of(plan.storage_class_name)),
                pulumi.ResourceOptions(parent=self, depends_on=deps),
            )

    def _outputs(self) -> dict[str, Any]:
        """The component's outputs (`layout_outputs`), of the resolved stack when the stack has Outputs."""
        pick = self._pick

        def read(key: str) -> Callable[[AssembledStack], Any]:
            return lambda assembled: layout_outputs(_picked(pick, assembled))[key]

        return {key: self.stack.output(read(key)) for key in layout_outputs(self.layout)}


def _picked(pick: Callable[[AssembledStack], Optional[RenderedLayout]], assembled: AssembledStack) -> RenderedLayout:
    layout = pick(assembled)
    assert layout is not None  # the resolved stack has the same layouts as the judged one
    return layout


def _inference_training(assembled: AssembledStack) -> Optional[RenderedLayout]:
    return assembled.rendered.inference_training


def _shared_pool(assembled: AssembledStack) -> Optional[RenderedLayout]:
    return assembled.rendered.shared_pool


def _missing(component: str, key: str) -> ValueError:
    return ValueError(f"{component}: the stack has no kueue-cohorts:{key}, the layout this component registers. Fix: "
                      f"set `{key}` in the stack you pass as `stack`")


@dataclass(frozen=True)
class InferenceTrainingCohortArgs:
    """Inputs of InferenceTrainingCohort."""

    stack: StackInput
    """The stack the cohort belongs to; required. A `components.settings.Settings` (what a stack file says, typed:
    nodePools, resourceFlavor, kueue, inferenceTraining, trainingRuntime, ...), or a mapping of the stack file's
    keys without the `kueue-cohorts:` prefix whose values may hold Outputs anywhere (docs/configuration.md lists
    every key), is judged at construction by the settings check the stack program runs
    (components/checks/validation.py: shape, settings rules, the rule book on the rendered objects), with the inputs
    below in place; a `JudgedStack` (another component's `.stack`) shares that component's judgement and Outputs.
    The cohort registers its `inferenceTraining` layout."""
    inference_namespaces: Optional[Sequence[pulumi.Input[str]]] = None
    """The inference namespaces, in order, instead of `inferenceTraining.inference.namespaces`; each a name or an
    Output (a Namespace's `metadata.name`). Omitted: the stack's. With a Namespace your program creates, use
    namespacePolicy Label or External (Create would create it a second time)."""
    training_namespaces: Optional[Sequence[pulumi.Input[str]]] = None
    """The training namespaces, instead of `inferenceTraining.training.namespaces`, as for `inference_namespaces`.
    Omitted: the stack's."""
    storage_class_name: Optional[pulumi.Input[str]] = None
    """The checkpoint claims' StorageClass (ReadWriteMany), instead of
    `inferenceTraining.training.checkpoint.storageClassName`; a name or an Output. Omitted: the stack's; both
    omitted: the cluster's default class."""
    flavor: Optional[pulumi.Resource] = None
    """The ResourceFlavor resource the ClusterQueues are created after (the stack program passes its own).
    Omitted: the cohort registers the stack's ResourceFlavors itself (children `{name}-flavor...`); a program with
    both layouts passes the first cohort's `flavors[0]` to the second."""
    namespace_owner: Optional[str] = None
    """The `kueue-cohorts/owner` mark on the Namespaces the layout creates. Omitted: a JudgedStack's own, else
    `<project>/<stack>` of the running program."""


class InferenceTrainingCohort(_CohortComponent):
    """The asymmetric cohort: inference owns the quota, training borrows it until inference reclaims it.

    Attributes (besides those of every cohort component): `settings` (the inferenceTraining block as judged),
    `inference_namespaces` / `training_namespaces` (the names as judged: a namespace given as an Output is its
    stand-in, see components/resources/judged.py), `inference_cluster_queue`, `training_cluster_queue`,
    `inference_local_queues` / `training_local_queues` (namespace -> LocalQueue), `inference_priority_class`,
    `training_priority_class` (ManifestResource), `inference_spec` / `training_spec` (ClusterQueueSpec),
    `training_checkpoints` (namespace -> CheckpointVolume). Outputs: `cohort`, `clusterQueues`, `localQueues`,
    `workloadPriorityClasses` (of the resolved stack), also as the attribute `outputs`.
    Raises:
        InvalidStack: the settings check refused the stack (every problem at once; nothing registered).
        ValueError: the stack has no inferenceTraining.
    Upstream: Kueue concepts/cluster_queue.md (borrowingLimit, reclaimWithinCohort), preemption.md (v0.19.2).
    """

    def __init__(self, name: str, args: InferenceTrainingCohortArgs, opts: Optional[pulumi.ResourceOptions] = None):
        if stack_settings_value(args.stack, "inferenceTraining") is None:
            raise _missing("InferenceTrainingCohort", "inferenceTraining")
        top = ("inferenceTraining",)
        stack = JudgedStack.of(args.stack, {
            top + ("inference", "namespaces"): _listed(args.inference_namespaces),
            top + ("training", "namespaces"): _listed(args.training_namespaces),
            top + ("training", "checkpoint", "storageClassName"): args.storage_class_name,
        }, args.namespace_owner)
        s: InferenceTrainingSettings = stack.settings.inference_training  # type: ignore[assignment]  # checked above
        super().__init__("kueue-cohorts:cohorts:InferenceTrainingCohort", name, stack, _inference_training,
                         args.flavor, opts)
        self.settings = s
        self.inference_spec = self.plan.cluster_queue(s.inference.cluster_queue)
        self.training_spec = self.plan.cluster_queue(s.training.cluster_queue)
        self.inference_cluster_queue = self.cluster_queues[s.inference.cluster_queue]
        self.training_cluster_queue = self.cluster_queues[s.training.cluster_queue]
        self.inference_namespaces = list(s.inference.namespaces)
        self.training_namespaces = list(s.training.namespaces)
        self.inference_local_queues = {ns: self.local_queues[f"{ns}/{s.inference.local_queue}"]
                                       for ns in s.inference.namespaces}
        self.training_local_queues = {ns: self.local_queues[f"{ns}/{s.training.local_queue}"]
                                      for ns in s.training.namespaces}
        self.training_checkpoints = {key.split("/", 1)[0]: volume for key, volume in self.checkpoints.items()}
        self.inference_priority_class = self.priority_classes[s.inference.priority_class.name]
        self.training_priority_class = self.priority_classes[s.training.priority_class.name]
        self.outputs = self._outputs()
        self.register_outputs(self.outputs)


@dataclass(frozen=True)
class SharedPoolCohortArgs:
    """Inputs of SharedPoolCohort."""

    stack: StackInput
    """The stack the cohort belongs to, as for InferenceTrainingCohortArgs.stack; required. The cohort registers its
    `sharedPool` layout."""
    tenant_namespaces: Optional[dict[str, Sequence[pulumi.Input[str]]]] = None
    """Tenant name -> its namespaces, in order, instead of `sharedPool.tenants[].namespaces`; each a name or an
    Output. Omitted (or a tenant left out): the stack's (a tenant without namespaces has the one named like it)."""
    flavor: Optional[pulumi.Resource] = None
    """As for InferenceTrainingCohortArgs.flavor. Omitted: the cohort registers the stack's ResourceFlavors."""
    namespace_owner: Optional[str] = None
    """As for InferenceTrainingCohortArgs.namespace_owner. Omitted: a JudgedStack's own, else `<project>/<stack>`."""


class SharedPoolCohort(_CohortComponent):
    """The symmetric cohort: each tenant keeps a floor (nominalQuota) and borrows the rest of the pool.

    Attributes: those of every cohort component; `settings` (the sharedPool block as judged),
    `tenant_cluster_queues` (tenant name -> ClusterQueue). Outputs as InferenceTrainingCohort's (`outputs`).
    Raises:
        InvalidStack: the settings check refused the stack. ValueError: the stack has no sharedPool, or
        `tenant_namespaces` names a tenant the stack does not have.
    Upstream: Kueue concepts/cohort.md, cluster_queue.md (lendingLimit, borrowingLimit), v0.19.2.
    """

    def __init__(self, name: str, args: SharedPoolCohortArgs, opts: Optional[pulumi.ResourceOptions] = None):
        if stack_settings_value(args.stack, "sharedPool") is None:
            raise _missing("SharedPoolCohort", "sharedPool")
        tenants = stack_settings_value(args.stack, "sharedPool", "tenants")
        index = {str(tenant.get("name")): i for i, tenant in enumerate(tenants or []) if isinstance(tenant, dict)}
        unknown = sorted(set(args.tenant_namespaces or {}) - set(index))
        if unknown:
            raise ValueError(f"SharedPoolCohortArgs.tenant_namespaces names {unknown}, not tenants of the stack's "
                             f"sharedPool ({sorted(index)}). Fix: use the tenants' names")
        stack = JudgedStack.of(args.stack, {("sharedPool", "tenants", index[tenant], "namespaces"): _listed(names)
                                            for tenant, names in (args.tenant_namespaces or {}).items()},
                               args.namespace_owner)
        s: SharedPoolSettings = stack.settings.shared_pool  # type: ignore[assignment]  # checked above
        super().__init__("kueue-cohorts:cohorts:SharedPoolCohort", name, stack, _shared_pool, args.flavor, opts)
        self.settings = s
        self.tenant_cluster_queues = {
            t.name: self.cluster_queues[t.cluster_queue_name] for t in s.tenants
        }
        self.outputs = self._outputs()
        self.register_outputs(self.outputs)



def _listed(values: Optional[Sequence[pulumi.Input[str]]]) -> Optional[list[pulumi.Input[str]]]:
    return list(values) if values is not None else None
