"""The two cohort layouts of our guide as Pulumi components.

InferenceTrainingCohort (asymmetric): inference owns the GPU nominalQuota, never borrows and reclaims with Any;
training owns nothing and borrows the idle inference quota. SharedPoolCohort (symmetric): every tenant keeps a floor
and borrows the rest of the pool. Both build their objects from the pure plans in components/plans.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from components.checkpoint import CheckpointVolume, CheckpointVolumeArgs
from components.kueue import OWNER_ANNOTATION
from components.plans import CohortPlan, plan_inference_training, plan_shared_pool
from components.resources import ManifestResource
from components.settings import InferenceTrainingSettings, NamespacePolicy, SharedPoolSettings

NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
"""The type token of k8s.core.v1.Namespace (the alias target of a layout's NamespacePatch)."""


class _CohortComponent(pulumi.ComponentResource):
    """Registers every object of a CohortPlan as children of this component.

    Children: Namespaces (per namespace_policy), WorkloadPriorityClasses, an optional Cohort object, the
    ClusterQueues, the LocalQueues (each depending on its namespace; replaced, not updated, when its ClusterQueue
    changes, since spec.clusterQueue is immutable) and the checkpoint PVCs.
    Namespaces: Create registers a Namespace carrying `kueue-cohorts/owner: <namespace_owner>` (the mark the namespace
    preflight checks on later runs); Label registers a NamespacePatch of the selector label only, aliased to the
    Namespace of the same name, so that switching a layout from Create to Label turns the stack's Namespace into a
    patch in place (server-side apply under the same field manager drops every other field the stack wrote, the
    mark included) instead of deleting the namespace; deleting a NamespacePatch (destroy, a removed tenant)
    relinquishes its fields and keeps the namespace (provider 4.25.0 `ssa.Relinquish`). External registers nothing.
    Attributes: `plan`, `cluster_queues` / `local_queues` / `priority_classes` / `namespaces` / `checkpoints`
    (dicts keyed by object name; local queues and checkpoints by "namespace/name").
    """

    def __init__(self, type_token: str, name: str, plan: CohortPlan, flavor: ManifestResource, namespace_owner: str,
                 opts: Optional[pulumi.ResourceOptions]):
        super().__init__(type_token, name, None, opts)
        self.plan = plan
        child = pulumi.ResourceOptions(parent=self)
        self.namespaces: dict[str, pulumi.Resource] = {}
        for ns in plan.namespaces:
            if plan.namespace_policy == NamespacePolicy.CREATE:
                self.namespaces[ns.name] = k8s.core.v1.Namespace(
                    f"{name}-ns-{ns.name}",
                    metadata=k8s.meta.v1.ObjectMetaArgs(name=ns.name, labels=ns.manifest()["metadata"]["labels"],
                                                        annotations={OWNER_ANNOTATION: namespace_owner}),
                    opts=child,
                )
            elif plan.namespace_policy == NamespacePolicy.LABEL:
                self.namespaces[ns.name] = k8s.core.v1.NamespacePatch(
                    f"{name}-ns-{ns.name}",
                    metadata=k8s.meta.v1.ObjectMetaPatchArgs(name=ns.name, labels=dict(ns.labels)),
                    # Create -> Label: the same resource, updated in place (never a delete of the Namespace).
                    opts=pulumi.ResourceOptions(parent=self, aliases=[pulumi.Alias(type_=NAMESPACE_TYPE)]),
                )
        self.priority_classes = {
            pc.name: ManifestResource(f"{name}-wpc-{pc.name}", pc.manifest(), child) for pc in plan.priority_classes
        }
        self.cohort_object = (
            ManifestResource(f"{name}-cohort", plan.cohort_object.manifest(), child) if plan.cohort_object else None
        )
        after_flavor = pulumi.ResourceOptions(parent=self, depends_on=[flavor])
        self.cluster_queues = {
            cq.name: ManifestResource(f"{name}-cq-{cq.name}", cq.manifest(), after_flavor) for cq in plan.cluster_queues
        }
        self.local_queues: dict[str, ManifestResource] = {}
        for lq in plan.local_queues:
            deps: list[pulumi.Resource] = [self.cluster_queues[lq.cluster_queue.name]]
            if lq.namespace in self.namespaces:
                deps.append(self.namespaces[lq.namespace])
            self.local_queues[f"{lq.namespace}/{lq.name}"] = ManifestResource(
                f"{name}-lq-{lq.namespace}-{lq.name}",
                lq.manifest(),
                # spec.clusterQueue is immutable, so a new ClusterQueue replaces the LocalQueue; its name stays, so
                # the old one must go first (create-before-delete would fail: "already exists").
                pulumi.ResourceOptions(parent=self, depends_on=deps, replace_on_changes=["spec.clusterQueue"],
                                       delete_before_replace=True),
            )
        self.checkpoints: dict[str, CheckpointVolume] = {}
        for namespace, ckpt in plan.checkpoints:
            deps = [self.namespaces[namespace]] if namespace in self.namespaces else []
            self.checkpoints[f"{namespace}/{ckpt.claim_name}"] = CheckpointVolume(
                f"{name}-ckpt-{namespace}",
                CheckpointVolumeArgs(namespace=namespace, settings=ckpt),
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

    settings: the validated `kueue-cohorts:inferenceTraining` block. flavor: the stack's ResourceFlavor resource
    (every ClusterQueue quota refers to it, so the queues are created after it). namespace_owner: the stack's name for
    the ownership mark of the Namespaces it creates (`components.kueue.namespace_owner(project, stack)`).
    """

    settings: InferenceTrainingSettings
    flavor: ManifestResource
    namespace_owner: str


class InferenceTrainingCohort(_CohortComponent):
    """The asymmetric cohort: inference owns the quota, training borrows it until inference reclaims it.

    Attributes (besides those of every cohort component): `inference_cluster_queue`, `training_cluster_queue`,
    `inference_local_queues` / `training_local_queues` (namespace -> LocalQueue), `inference_priority_class`,
    `training_priority_class` (ManifestResource), `inference_spec` / `training_spec` (ClusterQueueSpec).
    Upstream: Kueue concepts/cluster_queue.md (borrowingLimit, reclaimWithinCohort), preemption.md.
    """

    def __init__(self, name: str, args: InferenceTrainingCohortArgs, opts: Optional[pulumi.ResourceOptions] = None):
        plan = plan_inference_training(args.settings, args.flavor.object_name)
        super().__init__("kueue-cohorts:cohorts:InferenceTrainingCohort", name, plan, args.flavor,
                         args.namespace_owner, opts)
        s = args.settings
        self.inference_spec = plan.cluster_queue(s.inference.cluster_queue)
        self.training_spec = plan.cluster_queue(s.training.cluster_queue)
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
    """Inputs of SharedPoolCohort: the validated `kueue-cohorts:sharedPool` block, the stack's ResourceFlavor and the
    stack's namespace_owner (as for InferenceTrainingCohortArgs)."""

    settings: SharedPoolSettings
    flavor: ManifestResource
    namespace_owner: str


class SharedPoolCohort(_CohortComponent):
    """The symmetric cohort: each tenant keeps a floor (nominalQuota) and borrows the rest of the pool.

    Attributes: those of every cohort component; `tenant_cluster_queues` (tenant name -> ClusterQueue).
    Upstream: Kueue concepts/cohort.md, cluster_queue.md (lendingLimit, borrowingLimit).
    """

    def __init__(self, name: str, args: SharedPoolCohortArgs, opts: Optional[pulumi.ResourceOptions] = None):
        plan = plan_shared_pool(args.settings, args.flavor.object_name)
        super().__init__("kueue-cohorts:cohorts:SharedPoolCohort", name, plan, args.flavor, args.namespace_owner,
                         opts)
        self.tenant_cluster_queues = {
            t.name: self.cluster_queues[t.cluster_queue or f"{t.name}-cq"] for t in args.settings.tenants
        }
        self.register_outputs(self._outputs())
