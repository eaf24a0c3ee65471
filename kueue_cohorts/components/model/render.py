"""Pure: Settings -> every Kubernetes object of the stack, each with the stack config keys its fields come from.

This is what the settings check judges with the rule book before anything is registered, what `cohorts verify`
compares with a live cluster, and what the components register (they call the same render functions). Each
`Rendered` object carries its provenance: `source` is the config key of the object as a whole, `fields` maps a
field path inside the manifest (kubectl style, `policy.rules.vocabulary.paths.format_path`) to the config key that
wrote it, so a rule's finding on a field is reported at the exact key the user wrote.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Mapping, Optional, Sequence

import yaml

from kueue_cohorts.components.model.kueue import OWNER_ANNOTATION
from kueue_cohorts.components.model.manager_config import MANAGER_CONFIG_KEY, manager_configuration
from kueue_cohorts.components.model.multikueue import (
    admission_check_manifest,
    admission_checks,
    cluster_manifest,
    config_manifest,
    kubeconfig_secret,
    worker_identity,
    worker_settings,
    writes_secret,
)
from kueue_cohorts.components.model.plans import (
    CohortPlan,
    flavor_spec,
    flavor_specs,
    plan_inference_training,
    plan_shared_pool,
)
from kueue_cohorts.components.model.runtime import configmap_name, render_runtime, trainer_sources
from kueue_cohorts.components.model.services import inference_service_manifest
from kueue_cohorts.components.settings import CheckpointSettings, KueueSettings, NamespacePolicy, Settings
from kueue_cohorts.components.settings.runtime import TrainingRuntimeSettings
from kueue_cohorts.policy.rules.vocabulary.kueue_counts import MANAGER_CONFIG_MAP
from kueue_cohorts.policy.rules.vocabulary.objects import MANAGED_LABELS, ROLE_LABEL
from kueue_cohorts.policy.rules.vocabulary.paths import format_path, parse_path

KeyPath = tuple[Any, ...]
"""A config key path without the project prefix: ("inferenceTraining", "inference", "borrowingLimit", "cpu")."""


@dataclass(frozen=True, slots=True)
class Rendered:
    """One object of the stack.

    manifest: the object as the API server receives it (exactly the inputs the components register). source: the
    config key path of the object as a whole. fields: field path in `manifest` -> config key path, for fields whose
    value a config key sets (longest prefix wins; the rest of the field path is appended to the key). registered:
    False for objects rendered only to be judged (the Kueue manager Configuration, which the Kueue chart carries).
    patch: True when the stack owns only these fields of an object that exists (a `namespacePolicy: Label`
    namespace: its selector labels), registered as `<Kind>Patch`.
    """

    manifest: Mapping[str, Any]
    source: KeyPath
    fields: Mapping[str, KeyPath] = field(default_factory=dict)
    registered: bool = True
    patch: bool = False

    @property
    def type_token(self) -> str:
        """The Pulumi type token the object is registered (and judged by the pack) under: `kubernetes:<group or
        core>/<version>:<kind>`, with `Patch` appended for a patch (e.g. `kubernetes:core/v1:NamespacePatch`: the
        stack owns only the fields of `manifest` on an object that exists, by server-side apply; pulumi-kubernetes
        4.25.0 `<Kind>Patch` resources)."""
        group, _, version = str(self.manifest["apiVersion"]).rpartition("/")
        return f"kubernetes:{group or 'core'}/{version}:{self.kind}{'Patch' if self.patch else ''}"

    @property
    def kind(self) -> str:
        """The manifest's kind."""
        return str(self.manifest["kind"])

    @property
    def name(self) -> str:
        """metadata.name."""
        return str(self.manifest["metadata"]["name"])

    @property
    def namespace(self) -> Optional[str]:
        """metadata.namespace, or None for cluster-scoped objects."""
        namespace: Optional[str] = self.manifest["metadata"].get("namespace")
        return namespace


@dataclass(frozen=True, slots=True)
class RenderedLayout:
    """The objects of one cohort layout, by role, each group in registration order: what a layout component
    (components/resources/layouts.py) registers, object by object.

    key: the layout's config key ("inferenceTraining" or "sharedPool"). plan: the pure CohortPlan they were
    rendered from (names, specs). namespaces: Namespaces (Create) or NamespacePatches (Label; none for External).
    priority_classes, cohort (the Cohort object or None), cluster_queues, local_queues: the Kueue objects.
    checkpoints: the training PersistentVolumeClaims. services: the InferenceServices. runtimes: per training
    namespace (TrainingRuntime, its trainer ConfigMap).
    """

    key: str
    plan: CohortPlan
    namespaces: tuple[Rendered, ...] = ()
    priority_classes: tuple[Rendered, ...] = ()
    cohort: Optional[Rendered] = None
    cluster_queues: tuple[Rendered, ...] = ()
    local_queues: tuple[Rendered, ...] = ()
    checkpoints: tuple[Rendered, ...] = ()
    services: tuple[Rendered, ...] = ()
    runtimes: tuple[tuple[Rendered, Rendered], ...] = ()

    def cohort_objects(self) -> list[Rendered]:
        """Every object but the runtimes, in registration order (namespaces, priority classes, Cohort,
        ClusterQueues, LocalQueues, checkpoint claims, InferenceServices)."""
        return [*self.namespaces, *self.priority_classes, *([self.cohort] if self.cohort else []),
                *self.cluster_queues, *self.local_queues, *self.checkpoints, *self.services]

    def runtime_objects(self) -> list[Rendered]:
        """The TrainingRuntimes and their ConfigMaps, runtime first, namespace by namespace."""
        return [item for pair in self.runtimes for item in pair]


@dataclass(frozen=True, slots=True)
class RenderedWorker:
    """One MultiKueue worker cluster's objects (`multiKueue.workers[index]`), registered with its own provider.

    name: the worker (its MultiKueueCluster name). index: its position in `multiKueue.workers`. settings: the stack
    as the worker runs it (`components.model.multikueue.worker_settings`: its nodePools; no Kueue install, no
    InferenceServices). stack: those settings rendered (flavors, layouts, runtimes, the judged-only Kueue
    Configuration). identity: the ServiceAccount, ClusterRole and ClusterRoleBinding the manager's Kueue acts as.
    """

    name: str
    index: int
    settings: Settings
    stack: RenderedStack
    identity: tuple[Rendered, ...]

    def objects(self) -> list[Rendered]:
        """Every object of the worker in registration order: its stack's objects, then its identity."""
        return [*self.stack.objects(), *self.identity]


@dataclass(frozen=True, slots=True)
class RenderedStack:
    """Every object of a stack that the model renders from Settings alone, by part.

    kueue: Kueue's Namespace when the stack installs Kueue (`kueue.install`), then the manager Configuration's
    ConfigMap (judged only: the chart registers it). flavors: the ResourceFlavors in declared order.
    inference_training / shared_pool: the layouts (None when not configured). multikueue: the manager's MultiKueue
    objects (the kubeconfig Secrets the stack writes, without their data, the MultiKueueClusters, MultiKueueConfigs
    and AdmissionChecks). workers: each MultiKueue worker's objects (other clusters: not part of `objects()`).
    The admission guardrails and the preview identity are added by `components.model.assembly` (they are generated by
    the rule book and from this stack's objects).
    """

    kueue: tuple[Rendered, ...]
    flavors: tuple[Rendered, ...]
    inference_training: Optional[RenderedLayout] = None
    shared_pool: Optional[RenderedLayout] = None
    multikueue: tuple[Rendered, ...] = ()
    workers: tuple[RenderedWorker, ...] = ()

    def layouts(self) -> list[RenderedLayout]:
        """The configured layouts, inferenceTraining first."""
        return [layout for layout in (self.inference_training, self.shared_pool) if layout is not None]

    def objects(self) -> list[Rendered]:
        """Every object of this cluster in registration order: Kueue's Namespace, the ResourceFlavors, the
        MultiKueue objects, each layout's cohort objects, the TrainingRuntimes with their ConfigMaps, the manager
        ConfigMap (judged only). The workers' objects are theirs (`workers[i].objects()`)."""
        installed = [r for r in self.kueue if r.registered]
        judged_only = [r for r in self.kueue if not r.registered]
        return [*installed, *self.flavors, *self.multikueue,
                *(r for layout in self.layouts() for r in layout.cohort_objects()),
                *(r for layout in self.layouts() for r in layout.runtime_objects()), *judged_only]


def _quota_fields(manifest: Mapping[str, Any], keys: Sequence[Mapping[str, KeyPath]]) -> dict[str, KeyPath]:
    """Map every quota field of a ClusterQueue/Cohort manifest: `keys[f]` gives, for `flavors[f]` of each resource
    group and per quota field name (nominalQuota, borrowingLimit, lendingLimit), the config key path of its resource
    map (a flavor without keys of its own takes the last one's)."""
    out: dict[str, KeyPath] = {}
    for g, group in enumerate(manifest["spec"].get("resourceGroups", [])):
        for f, flavor in enumerate(group["flavors"]):
            flavor_keys = keys[min(f, len(keys) - 1)] if keys else {}
            for r, res in enumerate(flavor["resources"]):
                if "nominalQuota" in flavor_keys:
                    out[_resource_path(g, f, r)] = flavor_keys["nominalQuota"] + (res["name"],)
                for name, base in flavor_keys.items():
                    out[_resource_path(g, f, r, name)] = base + (res["name"],)
    return out


@lru_cache(maxsize=4096)
def _resource_path(group: int, flavor: int, resource: int, name: Optional[str] = None) -> str:
    """The field path of `resources[resource]` of `flavors[flavor]` of `resourceGroups[group]` (and of its field
    `name`), remembered: every ClusterQueue of a pool has the same few."""
    path: list[Any] = ["spec", "resourceGroups", group, "flavors", flavor, "resources", resource]
    return format_path(path + [name] if name is not None else path)


def _flavor_keys(base: KeyPath, flavors: Optional[Sequence[Any]],
                 single: Mapping[str, str]) -> list[dict[str, KeyPath]]:
    """Per flavor, quota field name -> config key path: `base.flavors[i].<field>` when the queue declares
    `flavors`, else `base.<single key>` for the single-flavor keys (`single`: field name -> key name, e.g.
    {"nominalQuota": "floor"})."""
    if flavors:
        return [{name: base + ("flavors", i, name) for name in single} for i in range(len(flavors))]
    return [{name: base + (key,) for name, key in single.items()}]


def _cohort_objects(plan: CohortPlan, top: str, queue_keys: Mapping[str, KeyPath],
                    namespace_keys: Mapping[str, KeyPath], local_queue_keys: Mapping[str, KeyPath],
                    priority_keys: Mapping[str, KeyPath], quota_keys: Mapping[str, Mapping[str, Any]],
                    cohort_keys: Sequence[Mapping[str, KeyPath]] = (), owner: Optional[str] = None,
                    checks: Optional[Mapping[str, tuple[int, str]]] = None) -> RenderedLayout:
    layout: KeyPath = (top,)
    namespaces = []
    for ns in plan.namespaces:
        policy = plan.policy_of(ns.name)
        if policy == NamespacePolicy.CREATE:
            namespaces.append(Rendered(ns.manifest(owner), namespace_keys[ns.name]))
        elif policy == NamespacePolicy.LABEL:
            namespaces.append(Rendered(ns.patch_manifest(), namespace_keys[ns.name], patch=True))
    priority_classes = []
    for pc in plan.priority_classes:
        base = priority_keys[pc.name]
        priority_classes.append(Rendered(pc.manifest(), base, {"value": base + ("value",),
                                                               "metadata.name": base + ("name",)}))
    cohort = None
    if plan.cohort_object is not None:
        manifest = plan.cohort_object.manifest()
        keys = list(cohort_keys) or [{"nominalQuota": layout + ("cohortQuota",)}]
        source = layout + ("cohortFlavors",) if cohort_keys else layout + ("cohortQuota",)
        cohort = Rendered(manifest, source, _quota_fields(manifest, keys))
    cluster_queues = []
    for cq in plan.cluster_queues:
        check = (checks or {}).get(cq.name)
        manifest = replace(cq, admission_checks=(check[1],)).manifest() if check else cq.manifest()
        base = queue_keys[cq.name]
        fields = {
            "spec.cohortName": layout + ("cohort",),
            "spec.namespaceSelector": base[:-1] + ("namespaces",) if base[-1] == "clusterQueue" else base,
            "spec.preemption": quota_keys[cq.name].get("preemption", base[:-1] + ("preemption",)),
            "spec.queueingStrategy": layout + ("queueingStrategy",),
            "spec.stopPolicy": layout + ("stopPolicy",),
            "metadata.name": base,
        }
        if "resourceGroups" in quota_keys[cq.name]:
            fields["spec.resourceGroups"] = quota_keys[cq.name]["resourceGroups"]
        if "flavorFungibility" in quota_keys[cq.name]:
            fields["spec.flavorFungibility"] = quota_keys[cq.name]["flavorFungibility"]
        if check:
            fields["spec.admissionChecksStrategy"] = ("multiKueue", "dispatch", check[0])
        fields.update(_quota_fields(manifest, quota_keys[cq.name]["flavors"]))
        cluster_queues.append(Rendered(manifest, base[:-1] if base[-1] == "clusterQueue" else base, fields))
    local_queues = []
    for lq in plan.local_queues:
        base = local_queue_keys[f"{lq.namespace}/{lq.name}"]
        local_queues.append(Rendered(lq.manifest(), base, {"spec.clusterQueue": base[:-1] + ("clusterQueue",),
                                                           "metadata.namespace": namespace_keys[lq.namespace]}))
    return RenderedLayout(top, plan, tuple(namespaces), tuple(priority_classes), cohort, tuple(cluster_queues),
                          tuple(local_queues))


def _inference_training(settings: Settings, owner: Optional[str]) -> RenderedLayout:
    layout = settings.inference_training
    assert layout is not None
    plan = plan_inference_training(layout, settings.flavor_names()[0])
    top = "inferenceTraining"
    inf, trn = layout.inference, layout.training
    queue_keys = {inf.cluster_queue: (top, "inference", "clusterQueue"),
                  trn.cluster_queue: (top, "training", "clusterQueue")}
    namespace_keys: dict[str, KeyPath] = {}
    local_queue_keys: dict[str, KeyPath] = {}
    for side, queue in (("inference", inf), ("training", trn)):
        for index, ns in enumerate(queue.namespaces):
            namespace_keys.setdefault(ns, (top, side, "namespaces", index))
            local_queue_keys.setdefault(f"{ns}/{queue.local_queue}", (top, side, "localQueue"))
    priority_keys = {inf.priority_class.name: (top, "inference", "priorityClass"),
                     trn.priority_class.name: (top, "training", "priorityClass")}
    inf_base: KeyPath = (top, "inference")
    trn_base: KeyPath = (top, "training")
    inf_flavors = _flavor_keys(inf_base, inf.flavors, {"nominalQuota": "nominalQuota",
                                                       "borrowingLimit": "borrowingLimit",
                                                       "lendingLimit": "lendingLimit"})
    if trn.flavors or not inf.flavors:
        trn_flavors = _flavor_keys(trn_base, trn.flavors, {"borrowingLimit": "borrowingLimit"})
    else:  # training borrows in the inference flavors, up to their nominalQuota: that key wrote it
        trn_flavors = [{"borrowingLimit": keys["nominalQuota"]} for keys in inf_flavors]
    quota_keys: dict[str, dict[str, Any]] = {
        inf.cluster_queue: {"resourceGroups": inf_base + (("flavors",) if inf.flavors else ("nominalQuota",)),
                            "flavors": inf_flavors, "preemption": inf_base + ("preemption",),
                            "flavorFungibility": inf_base + ("flavorFungibility",) if inf.flavor_fungibility
                            else (top, "flavorFungibility")},
        trn.cluster_queue: {"flavors": trn_flavors, "preemption": trn_base + ("preemption",),
                            "flavorFungibility": trn_base + ("flavorFungibility",) if trn.flavor_fungibility
                            else (top, "flavorFungibility")},
    }
    if trn.flavors:
        quota_keys[trn.cluster_queue]["resourceGroups"] = trn_base + ("flavors",)
    cohort_keys = [{"nominalQuota": (top, "cohortFlavors", i, "nominalQuota")}
                   for i in range(len(layout.cohort_flavors or []))]
    out = _cohort_objects(plan, top, queue_keys, namespace_keys, local_queue_keys, priority_keys, quota_keys,
                          cohort_keys, owner, admission_checks(settings))
    checkpoints = tuple(checkpoint(namespace, ckpt) for namespace, ckpt in plan.checkpoints)
    services = []
    nominal = plan.inference_nominal
    for index, service in enumerate(inf.services):
        base: KeyPath = (top, "inference", "services", index)
        namespace = service.namespace or inf.namespaces[0]
        priority = service.priority_class or inf.priority_class.name
        manifest = inference_service_manifest(service, namespace, inf.local_queue, priority, nominal)
        fields: dict[str, KeyPath] = {
            "spec.predictor.deploymentStrategy": base + ("rollout",),
            "spec.predictor.deploymentStrategy.rollingUpdate.maxSurge": base + ("rollout", "maxSurge"),
            "spec.predictor.deploymentStrategy.rollingUpdate.maxUnavailable": base + ("rollout", "maxUnavailable"),
            "metadata.namespace": base + ("namespace",),
            "metadata.labels": base + ("priorityClass",),
            "spec.predictor.labels": base + ("priorityClass",),
            "spec.predictor.minReplicas": base + ("minReplicas",),
            "spec.predictor.maxReplicas": base + ("maxReplicas",),
        }
        for kind in ("requests", "limits"):
            for resource in getattr(service, kind):
                fields[format_path(["spec", "predictor", "model", "resources", kind, resource])] = \
                    base + (kind, resource)
        services.append(Rendered(manifest, base, fields))
    return replace(out, checkpoints=checkpoints, services=tuple(services), runtimes=_training_runtime(settings))


def _shared_pool(settings: Settings, owner: Optional[str]) -> RenderedLayout:
    layout = settings.shared_pool
    assert layout is not None
    plan = plan_shared_pool(layout, settings.flavor_names()[0])
    top = "sharedPool"
    queue_keys: dict[str, KeyPath] = {}
    namespace_keys: dict[str, KeyPath] = {}
    local_queue_keys: dict[str, KeyPath] = {}
    quota_keys: dict[str, dict[str, Any]] = {}
    for index, tenant in enumerate(layout.tenants):
        base: KeyPath = (top, "tenants", index)
        cq = tenant.cluster_queue_name
        queue_keys.setdefault(cq, base + ("clusterQueue",) if tenant.cluster_queue else base + ("name",))
        quota_keys.setdefault(cq, {
            "resourceGroups": base + (("flavors",) if tenant.flavors else ("floor",)),
            "flavors": _flavor_keys(base, tenant.flavors, {"nominalQuota": "floor" if not tenant.flavors
                                                           else "nominalQuota", "borrowingLimit": "borrowingLimit",
                                                           "lendingLimit": "lendingLimit"}),
            "preemption": (top, "preemption"),
            "flavorFungibility": base + ("flavorFungibility",) if tenant.flavor_fungibility
            else (top, "flavorFungibility")})
        for ns_index, ns in enumerate(tenant.namespace_names):
            ns_key = base + ("namespaces", ns_index) if tenant.namespaces else base + ("name",)
            namespace_keys.setdefault(ns, ns_key)
            lq = tenant.local_queue_name
            lq_key = base + ("localQueue",) if tenant.local_queue else base + ("name",)
            local_queue_keys.setdefault(f"{ns}/{lq}", lq_key)
    priority_keys = {pc.name: (top, "priorityClasses", i) for i, pc in enumerate(layout.priority_classes)}
    cohort_keys = [{"nominalQuota": (top, "cohortFlavors", i, "nominalQuota")}
                   for i in range(len(layout.cohort_flavors or []))]
    rendered = _cohort_objects(plan, top, queue_keys, namespace_keys, local_queue_keys, priority_keys, quota_keys,
                               cohort_keys, owner, admission_checks(settings))
    # A tenant's ClusterQueue is the tenant as a whole (its namespaceSelector comes from its name and namespaces).
    return replace(rendered, cluster_queues=tuple(
        replace(r, source=r.source[:3] if r.source[:2] == (top, "tenants") else r.source,
                fields={**r.fields, "spec.namespaceSelector": r.source[:3] + ("namespaces",)})
        for r in rendered.cluster_queues))


def checkpoint_claim(namespace: str, claim_name: str, storage_class: Optional[str], size: str) -> dict[str, Any]:
    """The checkpoint PersistentVolumeClaim manifest (ReadWriteMany, `size` requested, skipAwait)."""
    spec: dict[str, Any] = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": size}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": claim_name, "namespace": namespace,
                     "labels": {**MANAGED_LABELS, ROLE_LABEL: "checkpoint"},
                     "annotations": {"pulumi.com/skipAwait": "true"}},
        "spec": spec,
    }


def checkpoint(namespace: str, settings: CheckpointSettings) -> Rendered:
    """The checkpoint PersistentVolumeClaim of training namespace `namespace`, with its config keys
    (`inferenceTraining.training.checkpoint`)."""
    top: KeyPath = ("inferenceTraining", "training", "checkpoint")
    return Rendered(checkpoint_claim(namespace, settings.claim_name, settings.storage_class_name, settings.size),
                    top, {"spec.resources.requests.storage": top + ("size",)})


def training_runtime(runtime: TrainingRuntimeSettings, namespace: str, claim_name: str) -> tuple[Rendered, Rendered]:
    """The TrainingRuntime of `namespace` (mounting checkpoint claim `claim_name`) and the ConfigMap carrying its
    entrypoint (the trainer/ package), with their config keys (`trainingRuntime`)."""
    top: KeyPath = ("trainingRuntime",)
    pod = format_path(["spec", "template", "spec", "replicatedJobs", 0, "template", "spec", "template", "spec"])
    fields: dict[str, KeyPath] = {
        f"{pod}.terminationGracePeriodSeconds": top + ("terminationGracePeriodSeconds",),
        'metadata.annotations["kueue-cohorts/checkpoint-save-seconds"]': top + ("checkpointSaveSeconds",),
        "spec.mlPolicy.numNodes": top + ("numNodes",),
        f"{pod}.containers[0].command": top,
        f"{pod}.containers[0].image": top + ("image",),
        f"{pod}.containers[0].env": top + ("env",),
        f"{pod}.volumes": ("inferenceTraining", "training", "checkpoint"),
    }
    for kind, values in (("requests", runtime.requests), ("limits", runtime.resolved_limits)):
        for resource in values:
            field = format_path([*parse_path(pod), "containers", 0, "resources", kind, resource])
            fields[field] = top + (kind, resource)
    config_map = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": configmap_name(runtime), "namespace": namespace, "labels": dict(MANAGED_LABELS)},
                  "data": trainer_sources()}
    return Rendered(render_runtime(runtime, namespace, claim_name), top, fields), Rendered(config_map, top)


def _training_runtime(settings: Settings) -> tuple[tuple[Rendered, Rendered], ...]:
    runtime, layout = settings.training_runtime, settings.inference_training
    if runtime is None or layout is None or layout.training.checkpoint is None:
        return ()
    return tuple(training_runtime(runtime, namespace, layout.training.checkpoint.claim_name)
                 for namespace in layout.training.namespaces)


def manager_config_map(settings: Settings) -> dict[str, Any]:
    """The Kueue chart's manager ConfigMap as it would carry our Configuration (`MANAGER_CONFIG_MAP` in Kueue's
    namespace, key controller_manager_config.yaml)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": MANAGER_CONFIG_MAP, "namespace": settings.kueue.namespace},
        "data": {MANAGER_CONFIG_KEY: yaml.safe_dump(manager_configuration(settings.kueue), sort_keys=False)},
    }


def _flavors(settings: Settings) -> list[Rendered]:
    """The ResourceFlavors in declared order: `resourceFlavors[i]` (nodeLabels omitted: from its node pools), or
    the one `resourceFlavor`."""
    if not settings.resource_flavors:
        flavor = flavor_spec(settings.resource_flavor).manifest()
        return [Rendered(flavor, ("resourceFlavor",), {"metadata.name": ("resourceFlavor", "name"),
                                                       "spec.nodeLabels": ("resourceFlavor", "nodeLabels")})]
    out = []
    for index, spec in enumerate(flavor_specs(settings)):
        base: KeyPath = ("resourceFlavors", index)
        declared = settings.resource_flavors[index]
        labels = base + ("nodeLabels",) if declared.node_labels is not None else ("nodePools",)
        out.append(Rendered(spec.manifest(), base, {"metadata.name": base + ("name",), "spec.nodeLabels": labels,
                                                    "spec.nodeTaints": base + ("nodeTaints",),
                                                    "spec.tolerations": base + ("tolerations",)}))
    return out


def kueue_namespace(settings: KueueSettings, namespace_owner: Optional[str] = None) -> Rendered:
    """Kueue's Namespace as `KueueInstallation` creates it before the chart (`kueue.namespace`), with the stack's
    ownership mark (`kueue-cohorts/owner: <namespace_owner>`) when given."""
    metadata: dict[str, Any] = {"name": settings.namespace, "labels": dict(MANAGED_LABELS)}
    if namespace_owner is not None:
        metadata["annotations"] = {OWNER_ANNOTATION: namespace_owner}
    return Rendered({"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}, ("kueue", "namespace"))


def render(settings: Settings, namespace_owner: Optional[str] = None) -> RenderedStack:
    """Every object of the stack that Settings alone decide, by part (see RenderedStack).

    Args:
        settings: shape-valid Settings (the rules may still refuse them).
        namespace_owner: the stack's ownership mark (`components.model.kueue.namespace_owner(project, stack)`), set as
            the `kueue-cohorts/owner` annotation of every Namespace the stack creates; None leaves it out (a stack
            judged or compared without knowing its Pulumi stack).
    Returns:
        The RenderedStack. Linear in the number of tenants.
    Raises:
        ValueError, KeyError: settings that no manifest can express (the settings rules report them first).
    """
    kueue_config = Rendered(manager_config_map(settings), ("kueue",),
                            {f'data["{MANAGER_CONFIG_KEY}"]': ("kueue",), f"data['{MANAGER_CONFIG_KEY}']": ("kueue",),
                             f"data['{MANAGER_CONFIG_KEY}'].integrations.frameworks": ("kueue", "integrations")},
                            registered=False)
    kueue = ((kueue_namespace(settings.kueue, namespace_owner), kueue_config) if settings.kueue.install
             else (kueue_config,))
    manager, workers = _multikueue(settings, namespace_owner)
    return RenderedStack(
        kueue=kueue, flavors=tuple(_flavors(settings)),
        inference_training=_inference_training(settings, namespace_owner)
        if settings.inference_training is not None else None,
        shared_pool=_shared_pool(settings, namespace_owner) if settings.shared_pool is not None else None,
        multikueue=manager, workers=workers)


def _multikueue(settings: Settings, owner: Optional[str]) -> tuple[tuple[Rendered, ...], tuple[RenderedWorker, ...]]:
    """The manager's MultiKueue objects (per worker its kubeconfig Secret when the stack writes it and its
    MultiKueueCluster; per dispatch entry its MultiKueueConfig and AdmissionCheck) and every worker's objects."""
    mk = settings.multi_kueue
    if mk is None:
        return (), ()
    manager: list[Rendered] = []
    workers: list[RenderedWorker] = []
    for index, worker in enumerate(mk.workers):
        base: KeyPath = ("multiKueue", "workers", index)
        if writes_secret(settings, worker):
            manager.append(Rendered(kubeconfig_secret(settings, worker), base + ("secret",)))
        manager.append(Rendered(cluster_manifest(worker), base, {
            "metadata.name": base + ("name",), "spec.clusterSource.kubeConfig.location": base + ("secret", "name")}))
        view = worker_settings(settings, worker)
        identity = tuple(Rendered(m, base + ("serviceAccount",)) for m in worker_identity(settings, worker, owner))
        workers.append(RenderedWorker(worker.name, index, view, render(view, owner), identity))
    for index, entry in enumerate(mk.dispatch):
        base = ("multiKueue", "dispatch", index)
        name = entry.check_name()
        manager.append(Rendered(config_manifest(name, entry.workers), base, {"spec.clusters": base + ("workers",)}))
        manager.append(Rendered(admission_check_manifest(name), base))
    return tuple(manager), tuple(workers)


def render_stack(settings: Settings, namespace_owner: Optional[str] = None) -> list[Rendered]:
    """Every object of the stack, in registration order (`render(settings, namespace_owner).objects()`): Kueue's
    Namespace (when `kueue.install`), the ResourceFlavors, each layout's Namespaces (or NamespacePatches),
    WorkloadPriorityClasses, Cohort, ClusterQueues, LocalQueues, checkpoint PVCs and InferenceServices, the
    TrainingRuntimes with their ConfigMaps, and the Kueue manager Configuration's ConfigMap (registered by the Kueue
    chart when `kueue.install`, judged in every case).

    Args:
        settings: shape-valid Settings (the rules may still refuse them). namespace_owner: as for `render`.
    Returns:
        The Rendered objects. Linear in the number of tenants.
    """
    return render(settings, namespace_owner).objects()
