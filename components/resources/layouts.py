"""The two cohort layouts of our guide as Pulumi components.

InferenceTrainingCohort (asymmetric): inference owns the GPU nominalQuota, never borrows and reclaims with Any;
training owns nothing and borrows the idle inference quota. SharedPoolCohort (symmetric): every tenant keeps a floor
and borrows the rest of the pool. Both register the objects the model rendered for them (components/model/render.py,
`RenderedLayout`), exactly as rendered, and add only lifecycle (parent, aliases, depends_on, replacement).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pulumi

from components.model.render import RenderedLayout
from components.resources.checkpoint import CheckpointVolume, CheckpointVolumeArgs
from components.resources.manifest import ManifestResource
from components.settings import InferenceTrainingSettings, SharedPoolSettings

NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
"""The type token of k8s.core.v1.Namespace (the alias target of a layout's NamespacePatch)."""


class _CohortComponent(pulumi.ComponentResource):
    """Registers every object of a RenderedLayout (but its services and runtimes) as children of this component.

    Children, each the rendered manifest as it is: Namespaces (Create) or NamespacePatches (Label), the
    WorkloadPriorityClasses, the Cohort object (if any), the ClusterQueues (after the flavor), the LocalQueues (each
    after its ClusterQueue and namespace; replaced, not updated, when its ClusterQueue changes, since
    spec.clusterQueue is immutable) and the checkpoint volumes (CheckpointVolume, after their namespace).
    Namespaces: the rendered Create Namespace carries `kueue-cohorts/owner: <namespace_owner>` (the mark the
    namespace preflight checks on later runs); a Label namespace is rendered as a patch of the selector label only
    and registered as a NamespacePatch aliased to the Namespace of the same name, so that switching a layout from
    Create to Label turns the stack's Namespace into a patch in place (server-side apply under the same field
    manager drops every other field the stack wrote, the mark included) instead of deleting the namespace; deleting
    a NamespacePatch (destroy, a removed tenant) relinquishes its fields and keeps the namespace (provider 4.25.0
    `ssa.Relinquish`). External renders nothing.
    Attributes: `layout` (the RenderedLayout), `plan`, `cluster_queues` / `local_queues` / `priority_classes` /
    `namespaces` / `checkpoints` (dicts keyed by object name; local queues and checkpoints by "namespace/name").
    """

    def __init__(self, type_token: str, name: str, layout: RenderedLayout, flavor: ManifestResource,
                 checkpoint_retain: bool, opts: Optional[pulumi.ResourceOptions]):
        super().__init__(type_token, name, None, opts)
        self.layout = layout
        self.plan = layout.plan
        child = pulumi.ResourceOptions(parent=self)
        self.namespaces: dict[str, pulumi.Resource] = {}
        for ns in layout.namespaces:
            # Create -> Label: the same resource, updated in place (never a delete of the Namespace).
            ns_opts = pulumi.ResourceOptions(parent=self, aliases=[pulumi.Alias(type_=NAMESPACE_TYPE)]) \
                if ns.patch else child
            self.namespaces[ns.name] = ManifestResource.of(f"{name}-ns-{ns.name}", ns, ns_opts)
        self.priority_classes = {
            pc.name: ManifestResource.of(f"{name}-wpc-{pc.name}", pc, child) for pc in layout.priority_classes
        }
        self.cohort_object = ManifestResource.of(f"{name}-cohort", layout.cohort, child) if layout.cohort else None
        after_flavor = pulumi.ResourceOptions(parent=self, depends_on=[flavor])
        self.cluster_queues = {
            cq.name: ManifestResource.of(f"{name}-cq-{cq.name}", cq, after_flavor) for cq in layout.cluster_queues
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
            )
        self.checkpoints: dict[str, CheckpointVolume] = {}
        for claim in layout.checkpoints:
            namespace = claim.namespace or ""
            deps = [self.namespaces[namespace]] if namespace in self.namespaces else []
            self.checkpoints[f"{namespace}/{claim.name}"] = CheckpointVolume(
                f"{name}-ckpt-{namespace}", CheckpointVolumeArgs(claim, retain_on_delete=checkpoint_retain),
                pulumi.ResourceOptions(parent=self, depends_on=deps),
            )

    def _outputs(self) -> dict[str, Any]:
        return {
            "cohort": self.plan.cohort,
            "clusterQueues": sorted(self.cluster_queues),
            "localQueues": sorted(self.local_queues),
            "workloadPriorityClasses": sorted(self.priority_classes),
        }


@dataclass(frozen=True)
class InferenceTrainingCohortArgs:
    """Inputs of InferenceTrainingCohort.

    settings: the validated `kueue-cohorts:inferenceTraining` block (names and the checkpoint's retainOnDelete).
    layout: its rendered objects (`components.model.render.render(...).inference_training`, part of
    `components.model.assembly.assemble`), registered as they are. flavor: the stack's ResourceFlavor resource (every
    ClusterQueue quota refers to it, so the queues are created after it).
    """

    settings: InferenceTrainingSettings
    layout: RenderedLayout
    flavor: ManifestResource


class InferenceTrainingCohort(_CohortComponent):
    """The asymmetric cohort: inference owns the quota, training borrows it until inference reclaims it.

    Attributes (besides those of every cohort component): `inference_cluster_queue`, `training_cluster_queue`,
    `inference_local_queues` / `training_local_queues` (namespace -> LocalQueue), `inference_priority_class`,
    `training_priority_class` (ManifestResource), `inference_spec` / `training_spec` (ClusterQueueSpec).
    Upstream: Kueue concepts/cluster_queue.md (borrowingLimit, reclaimWithinCohort), preemption.md.
    """

    def __init__(self, name: str, args: InferenceTrainingCohortArgs, opts: Optional[pulumi.ResourceOptions] = None):
        s = args.settings
        retain = s.training.checkpoint.retain_on_delete if s.training.checkpoint is not None else True
        super().__init__("kueue-cohorts:cohorts:InferenceTrainingCohort", name, args.layout, args.flavor, retain,
                         opts)
        self.inference_spec = self.plan.cluster_queue(s.inference.cluster_queue)
        self.training_spec = self.plan.cluster_queue(s.training.cluster_queue)
        self.inference_cluster_queue = self.cluster_queues[s.inference.cluster_queue]
        self.training_cluster_queue = self.cluster_queues[s.training.cluster_queue]
        self.inference_local_queues = {ns: self.local_queues[f"{ns}/{s.inference.local_queue}"]
                                       for ns in s.inference.namespaces}
        self.training_local_queues = {ns: self.local_queues[f"{ns}/{s.training.local_queue}"]
                                      for ns in s.training.namespaces}
        self.inference_priority_class = self.priority_classes[s.inference.priority_class.name]
        self.training_priority_class = self.priority_classes[s.training.priority_class.name]
        self.register_outputs(self._outputs())


@dataclass(frozen=True)
class SharedPoolCohortArgs:
    """Inputs of SharedPoolCohort: the validated `kueue-cohorts:sharedPool` block, its rendered objects
    (`render(...).shared_pool`) and the stack's ResourceFlavor (as for InferenceTrainingCohortArgs)."""

    settings: SharedPoolSettings
    layout: RenderedLayout
    flavor: ManifestResource


class SharedPoolCohort(_CohortComponent):
    """The symmetric cohort: each tenant keeps a floor (nominalQuota) and borrows the rest of the pool.

    Attributes: those of every cohort component; `tenant_cluster_queues` (tenant name -> ClusterQueue).
    Upstream: Kueue concepts/cohort.md, cluster_queue.md (lendingLimit, borrowingLimit).
    """

    def __init__(self, name: str, args: SharedPoolCohortArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("kueue-cohorts:cohorts:SharedPoolCohort", name, args.layout, args.flavor, True, opts)
        self.tenant_cluster_queues = {
            t.name: self.cluster_queues[t.cluster_queue_name] for t in args.settings.tenants
        }
        self.register_outputs(self._outputs())
