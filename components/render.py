"""Pure: Settings -> every Kubernetes object of the stack, each with the stack config keys its fields come from.

This is what the settings check judges with the rule book before anything is registered, what `cohorts verify`
compares with a live cluster, and what the components register (they call the same render functions). Each
`Rendered` object carries its provenance: `source` is the config key of the object as a whole, `fields` maps a
field path inside the manifest (kubectl style, `policy.rules.values.format_path`) to the config key that wrote it,
so a rule's finding on a field is reported at the exact key the user wrote.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping, Optional, Sequence

import yaml

from components.kueue_config import MANAGER_CONFIG_KEY, manager_configuration
from components.plans import CohortPlan, flavor_spec, flavor_specs, plan_inference_training, plan_shared_pool
from components.runtime_manifests import MANAGED_BY, configmap_name, render_runtime, trainer_sources
from components.service_manifests import inference_service_manifest, surge_nominal
from components.settings import NamespacePolicy, Settings
from policy.rules.paths import format_path

KeyPath = tuple[Any, ...]
"""A config key path without the project prefix: ("inferenceTraining", "inference", "borrowingLimit", "cpu")."""


@dataclass(frozen=True, slots=True)
class Rendered:
    """One object of the stack.

    manifest: the object as the API server receives it. source: the config key path of the object as a whole.
    fields: field path in `manifest` -> config key path, for fields whose value a config key sets (longest prefix
    wins; the rest of the field path is appended to the key). registered: False for objects rendered only to be
    judged (the Kueue manager Configuration of a stack that does not install Kueue, namespaces a stack only
    references).
    """

    manifest: Mapping[str, Any]
    source: KeyPath
    fields: Mapping[str, KeyPath] = field(default_factory=dict)
    registered: bool = True

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
                    cohort_keys: Sequence[Mapping[str, KeyPath]] = ()) -> list[Rendered]:
    out: list[Rendered] = []
    layout: KeyPath = (top,)
    for ns in plan.namespaces:
        if plan.namespace_policy != NamespacePolicy.EXTERNAL:
            out.append(Rendered(ns.manifest(), namespace_keys[ns.name]))
    for pc in plan.priority_classes:
        base = priority_keys[pc.name]
        out.append(Rendered(pc.manifest(), base, {"value": base + ("value",), "metadata.name": base + ("name",)}))
    if plan.cohort_object is not None:
        manifest = plan.cohort_object.manifest()
        keys = list(cohort_keys) or [{"nominalQuota": layout + ("cohortQuota",)}]
        source = layout + ("cohortFlavors",) if cohort_keys else layout + ("cohortQuota",)
        out.append(Rendered(manifest, source, _quota_fields(manifest, keys)))
    for cq in plan.cluster_queues:
        manifest = cq.manifest()
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
        fields.update(_quota_fields(manifest, quota_keys[cq.name]["flavors"]))
        out.append(Rendered(manifest, base[:-1] if base[-1] == "clusterQueue" else base, fields))
    for lq in plan.local_queues:
        base = local_queue_keys[f"{lq.namespace}/{lq.name}"]
        out.append(Rendered(lq.manifest(), base, {"spec.clusterQueue": base[:-1] + ("clusterQueue",),
                                                  "metadata.namespace": namespace_keys[lq.namespace]}))
    return out


def _inference_training(settings: Settings) -> list[Rendered]:
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
                          cohort_keys)
    for namespace, ckpt in plan.checkpoints:
        out.append(Rendered(checkpoint_claim(namespace, ckpt.claim_name, ckpt.storage_class_name, ckpt.size),
                            (top, "training", "checkpoint"),
                            {"spec.resources.requests.storage": (top, "training", "checkpoint", "size")}))
    for index, service in enumerate(inf.services):
        base: KeyPath = (top, "inference", "services", index)
        namespace = service.namespace or inf.namespaces[0]
        priority = service.priority_class or inf.priority_class.name
        nominal = surge_nominal(inf)
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
        out.append(Rendered(manifest, base, fields))
    return out


def _shared_pool(settings: Settings) -> list[Rendered]:
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
        cq = tenant.cluster_queue or f"{tenant.name}-cq"
        queue_keys.setdefault(cq, base + ("clusterQueue",) if tenant.cluster_queue else base + ("name",))
        quota_keys.setdefault(cq, {
            "resourceGroups": base + (("flavors",) if tenant.flavors else ("floor",)),
            "flavors": _flavor_keys(base, tenant.flavors, {"nominalQuota": "floor" if not tenant.flavors
                                                           else "nominalQuota", "borrowingLimit": "borrowingLimit",
                                                           "lendingLimit": "lendingLimit"}),
            "preemption": (top, "preemption"),
            "flavorFungibility": base + ("flavorFungibility",) if tenant.flavor_fungibility
            else (top, "flavorFungibility")})
        for ns_index, ns in enumerate(tenant.namespaces or [tenant.name]):
            ns_key = base + ("namespaces", ns_index) if tenant.namespaces else base + ("name",)
            namespace_keys.setdefault(ns, ns_key)
            lq = tenant.local_queue or f"{tenant.name}-lq"
            lq_key = base + ("localQueue",) if tenant.local_queue else base + ("name",)
            local_queue_keys.setdefault(f"{ns}/{lq}", lq_key)
    priority_keys = {pc.name: (top, "priorityClasses", i) for i, pc in enumerate(layout.priority_classes)}
    cohort_keys = [{"nominalQuota": (top, "cohortFlavors", i, "nominalQuota")}
                   for i in range(len(layout.cohort_flavors or []))]
    rendered = _cohort_objects(plan, top, queue_keys, namespace_keys, local_queue_keys, priority_keys, quota_keys,
                               cohort_keys)
    # A tenant's ClusterQueue is the tenant as a whole (its namespaceSelector comes from its name and namespaces).
    return [Rendered(r.manifest, r.source[:3] if r.source[:2] == (top, "tenants") else r.source,
                     {**r.fields, "spec.namespaceSelector": r.source[:3] + ("namespaces",)}
                     if r.kind == "ClusterQueue" else r.fields, r.registered) for r in rendered]


def checkpoint_claim(namespace: str, claim_name: str, storage_class: Optional[str], size: str) -> dict[str, Any]:
    """The checkpoint PersistentVolumeClaim manifest (ReadWriteMany, `size` requested, skipAwait)."""
    spec: dict[str, Any] = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": size}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": claim_name, "namespace": namespace,
                     "labels": {"app.kubernetes.io/managed-by": "kueue-cohorts", "kueue-cohorts/role": "checkpoint"},
                     "annotations": {"pulumi.com/skipAwait": "true"}},
        "spec": spec,
    }


def _training_runtime(settings: Settings) -> list[Rendered]:
    runtime, layout = settings.training_runtime, settings.inference_training
    if runtime is None or layout is None or layout.training.checkpoint is None:
        return []
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
            fields[format_path([*_split(pod), "containers", 0, "resources", kind, resource])] = top + (kind, resource)
    out = []
    for namespace in layout.training.namespaces:
        manifest = render_runtime(runtime, namespace, layout.training.checkpoint.claim_name)
        out.append(Rendered(manifest, top, fields))
        out.append(Rendered({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": configmap_name(runtime), "namespace": namespace,
                                          "labels": dict(MANAGED_BY)},
                             "data": trainer_sources()}, top))
    return out


def _split(path: str) -> list[Any]:
    parts: list[Any] = []
    for piece in path.split("."):
        name, _, rest = piece.partition("[")
        parts.append(name)
        while rest:
            index, _, rest = rest.partition("]")
            parts.append(int(index))
            rest = rest.lstrip("[")
    return parts


def manager_config_map(settings: Settings) -> dict[str, Any]:
    """The Kueue chart's manager ConfigMap as it would carry our Configuration (`kueue-manager-config` in Kueue's
    namespace, key controller_manager_config.yaml)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kueue-manager-config", "namespace": settings.kueue.namespace},
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


def render_stack(settings: Settings) -> list[Rendered]:
    """Every object of the stack, in registration order: the ResourceFlavors, each layout's Namespaces,
    WorkloadPriorityClasses, Cohort, ClusterQueues, LocalQueues, checkpoint PVCs and InferenceServices, the
    TrainingRuntimes with their ConfigMaps, and the Kueue manager Configuration's ConfigMap (registered by the Kueue
    chart when `kueue.install`, judged in every case).

    Args:
        settings: shape-valid Settings (the rules may still refuse them).
    Returns:
        The Rendered objects. Linear in the number of tenants.
    """
    out = _flavors(settings)
    if settings.inference_training is not None:
        out += _inference_training(settings)
    if settings.shared_pool is not None:
        out += _shared_pool(settings)
    out += _training_runtime(settings)
    kueue_fields = {f'data["{MANAGER_CONFIG_KEY}"]': ("kueue",), f"data['{MANAGER_CONFIG_KEY}']": ("kueue",),
                    f"data['{MANAGER_CONFIG_KEY}'].integrations.frameworks": ("kueue", "integrations")}
    out.append(Rendered(manager_config_map(settings), ("kueue",), kueue_fields, registered=False))
    return out
