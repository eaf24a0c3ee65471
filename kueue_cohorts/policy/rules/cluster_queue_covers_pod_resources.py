"""CLUSTER_QUEUE_COVERS_POD_RESOURCES (stack policy): Kueue counts every pod of the stack against its ClusterQueue.

Four parts, each derived from the model of what the pinned Kueue counts (`vocabulary/kueue_counts.py`, Kueue
0.19.2), for every Kueue manager Configuration of the stack (`kueue_configuration.configurations`):
1. every ClusterQueue covers cpu and memory, or the Configuration excludes them (below);
2. every resource a ClusterQueue of the stack quotas (any resource group's coveredResources, any flavor's resources)
   is counted in full under its own name: no `resources.excludeResourcePrefixes` entry drops it and no
   `resources.transformations` Replace entry removes it or outputs less of it (`Counting.uncounted`); and a GPU
   (extended resource) the stack's workloads request that no queue quotas is not dropped either (`Counting.dropped`:
   Kueue refuses such a request, BlockUndeclared, unless the Configuration drops it, and then it is used uncounted);
3. `managedJobsNamespaceSelector` (defaulted as Kueue does) selects every tenant namespace of the stack, the
   namespaces of its LocalQueues, judged on the labels the stack gives them (or their name alone): in Kueue 0.19 a
   namespace it does not select is ignored for every job and pod, queue-name label or not;
4. `integrations.frameworks` (with the frameworks they enable) holds the kind of every object the stack runs in its
   tenant namespaces or queues by label (`kueue_counts.KIND_FRAMEWORKS`: Deployment -> deployment, a
   TrainingRuntime -> trainer.kubeflow.org/trainjob, ...) and `deployment` when the stack has an inference queue.

Part 1 in detail:

Every pod requests cpu and memory (containers without requests are defaulted from limits or LimitRanges, and Kueue
counts the pod overhead), and Kueue admits a Workload only when each resource it requests is covered by a resource
group of its ClusterQueue (`pkg/scheduler/flavorassigner`: "resource X unavailable in ClusterQueue") unless the
manager Configuration drops the resource before admission: `resources.excludeResourcePrefixes`
(apis/config/v1beta2/configuration_types.go, Resources.ExcludeResourcePrefixes). A ClusterQueue that covers only
GPUs (our guide's symmetric example) therefore admits nothing.

The excluded prefixes come from the stack's Kueue Configuration (a ConfigMap or chart values carrying one, see
`kueue_configuration.configurations`) and from the policy option `excludeResourcePrefixes` (generated from the stack's
`kueue.resources` for a Kueue the stack does not install).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Any, Iterable, Mapping, Optional, Sequence

import yaml

from .vocabulary import kueue_counts
from .vocabulary.declaration import Declaration, Level, Promise, Scope, names
from .vocabulary.kueue_configuration import configurations
from .vocabulary.namespaces import namespace_labels
from .vocabulary.objects import QUEUE_NAME_LABEL, KubeObject, guarded, safe_describe, skipped, violation
from .vocabulary.resource_values import is_extended_resource
from .vocabulary.resources import quantity_fields
from .vocabulary.roles import ROLE_OPTIONS, inference_queue_names
from .vocabulary.values import UnknownValueError, Violation, as_list, get, is_map

POD_RESOURCES = ("cpu", "memory")
"""What every pod requests."""


def excluded_prefixes(objects: Iterable[KubeObject], configured: Sequence[str] = ()) -> list[str]:
    """`resources.excludeResourcePrefixes` of every Kueue Configuration in the stack, plus `configured`."""
    prefixes = list(configured)
    for obj in objects:
        try:
            for _, text in configurations(obj):
                config = yaml.safe_load(text) if isinstance(text, str) else text
                if is_map(config):
                    prefixes += [str(p) for p in as_list(get(config, "resources", "excludeResourcePrefixes"))]
        except UnknownValueError as err:
            skipped(obj, err)  # the excluded prefixes decide what must be covered: fail closed
        except yaml.YAMLError:
            continue  # the KUEUE_MANAGER_CONFIG rule reports these
    return prefixes


@dataclass(frozen=True)
class FoundConfiguration:
    """A Kueue Configuration of the stack: the object carrying it, where in it (`data['...']`, `values...`), and
    what it makes Kueue count."""

    obj: KubeObject
    where: str
    counting: kueue_counts.Counting


def found_configurations(objects: Iterable[KubeObject], kueue_namespace: str = "kueue-system"
                         ) -> tuple[list[FoundConfiguration], list[Violation]]:
    """Every parseable Kueue Configuration of the stack, and the fail-closed violations of those unknown at preview
    (the KUEUE_MANAGER_CONFIG rule reports YAML that does not parse)."""
    found: list[FoundConfiguration] = []
    unknown: list[Violation] = []
    for obj in objects:

        def read(obj: KubeObject = obj) -> list[Violation]:
            for where, text in configurations(obj):
                try:
                    config = yaml.safe_load(text) if isinstance(text, str) else text
                except yaml.YAMLError:
                    continue
                if is_map(config) and (obj.kind != "ConfigMap" or str(get(config, "apiVersion") or "")
                                       .startswith("config.kueue.x-k8s.io")):
                    found.append(FoundConfiguration(obj, where, kueue_counts.parse(config, kueue_namespace)))
            return []

        unknown += guarded(obj, read)
    return found, unknown


def tenant_namespaces(objects: Iterable[KubeObject]) -> list[str]:
    """The stack's tenant namespaces: the namespaces of its LocalQueues (every queued workload reaches its
    ClusterQueue through one). A LocalQueue whose namespace is unknown at preview is left out (the rules that judge
    the LocalQueue report it)."""
    names = set()
    for obj in objects:
        if obj.is_kueue("LocalQueue"):
            try:
                namespace = obj.namespace
            except UnknownValueError:
                continue
            if namespace:
                names.add(namespace)
    return sorted(names)


def required_frameworks(objects: Iterable[KubeObject], tenants: AbstractSet[str], inference: bool
                        ) -> dict[str, list[str]]:
    """framework -> the objects (described) that need it: every object of a kind in `KIND_FRAMEWORKS` that lives in
    a tenant namespace, carries the queue-name label or is cluster-scoped (a ClusterTrainingRuntime), or whose
    namespace or labels are unknown at preview (assumed queued: fail closed); `deployment` for the inference queues
    when `inference`."""
    need: dict[str, list[str]] = {}
    if inference:
        need.setdefault(kueue_counts.INFERENCE_FRAMEWORK, []).append("Deployments on its inference ClusterQueues")
    for obj in objects:
        framework = kueue_counts.KIND_FRAMEWORKS.get((obj.group, obj.kind))
        if framework is None:
            continue
        try:
            namespace = obj.namespace
            runs = namespace is None or namespace in tenants or QUEUE_NAME_LABEL in obj.labels
        except UnknownValueError:
            runs = True
        if runs:
            need.setdefault(framework, []).append(safe_describe(obj))
    return need


def requested_devices(objects: Iterable[KubeObject], tenants: AbstractSet[str]) -> dict[str, list[str]]:
    """Extended resource (GPU) -> the objects (described) that request it (requests or limits of any pod template):
    the workloads `required_frameworks` counts as run by the stack. A quantity unknown at preview is skipped here
    (the quantities rule fails closed on it)."""
    found: dict[str, list[str]] = {}
    for obj in objects:
        if (obj.group, obj.kind) not in kueue_counts.KIND_FRAMEWORKS:
            continue
        try:
            namespace = obj.namespace
            if not (namespace is None or namespace in tenants or QUEUE_NAME_LABEL in obj.labels):
                continue
            fields = list(quantity_fields(obj))
        except UnknownValueError:
            continue
        for path, resource, _ in fields:
            if is_extended_resource(resource) and (".requests" in path or ".limits" in path):
                users = found.setdefault(resource, [])
                if safe_describe(obj) not in users:
                    users.append(safe_describe(obj))
    return found


def check_kueue_counts(objects: Sequence[KubeObject], inference_names: Iterable[str] = (),
                       kueue_namespace: str = "kueue-system") -> list[Violation]:
    """Parts 2-4 of the module docstring, for every Kueue Configuration of the stack.

    Args:
        objects: every object of the stack. inference_names: the stack's inference ClusterQueues (they need the
            deployment framework). kueue_namespace: Kueue's namespace when a Configuration has none.
    Returns:
        One violation per (Configuration, uncounted resource), per (Configuration, unselected tenant namespace) and
        per (Configuration, missing framework), each on the object carrying the Configuration at the field that
        causes it; fail-closed violations for values unknown at preview.
    """
    configs, found = found_configurations(objects, kueue_namespace)
    if not configs:
        return found
    quota: dict[str, list[str]] = {}
    for cq in (o for o in objects if o.is_kueue("ClusterQueue")):

        def read(cq: KubeObject = cq) -> list[Violation]:
            for name in sorted(covered(cq)):
                quota.setdefault(name, []).append(cq.name)
            return []

        found += guarded(cq, read)
    tenants: list[str] = []
    labels: dict[str, dict[str, str]] = {}
    need: dict[str, list[str]] = {}
    devices: dict[str, list[str]] = {}
    for config in configs:

        def scope(config: FoundConfiguration = config) -> list[Violation]:
            tenants[:] = tenant_namespaces(objects)
            labels.update(namespace_labels(objects))
            known = frozenset(tenants)  # membership per object: a set, so 10,000 tenants stay linear
            need.update(required_frameworks(objects, known, bool(set(inference_names))))
            devices.update(requested_devices(objects, known))
            return []

        found += guarded(config.obj, scope)
        found += _judge(config, quota, tenants, labels, need)
        found += _judge_devices(config, {r: users for r, users in devices.items() if r not in quota})
    return found


def _judge_devices(config: FoundConfiguration, devices: dict[str, list[str]]) -> list[Violation]:
    """A GPU the stack's workloads request that no ClusterQueue quotas is blocked by Kueue (BlockUndeclared), unless
    the Configuration drops or replaces it: then its pods run with GPUs Kueue never counts."""
    found: list[Violation] = []
    counting, obj, where = config.counting, config.obj, config.where
    for resource, users in sorted(devices.items()):
        why = counting.dropped(resource)
        if why is None:
            continue
        field = "resources.excludeResourcePrefixes" if "excludeResourcePrefixes" in why else "resources.transformations"
        shown = ", ".join(users[:3]) + (" and more" if len(users) > 3 else "")
        found.append(violation(
            obj, CLUSTER_QUEUE_COVERS_POD_RESOURCES.name, f"{where}.{field}", resource,
            f"{shown} request {resource!r}, which no ClusterQueue quotas, and {why}: those GPUs are used uncounted",
            f"remove the entry that drops or replaces {resource!r} (Kueue then refuses a request no queue covers), "
            f"or quota {resource!r} in the queues that run them"))
    return found


def _judge(config: FoundConfiguration, quota: dict[str, list[str]], tenants: Sequence[str],
           labels: dict[str, dict[str, str]], need: dict[str, list[str]]) -> list[Violation]:
    found: list[Violation] = []
    counting, obj, where = config.counting, config.obj, config.where
    for resource, queues in sorted(quota.items()):
        why = counting.uncounted(resource)
        if why is None:
            continue
        field = "resources.excludeResourcePrefixes" if "excludeResourcePrefixes" in why else "resources.transformations"
        shown = ("ClusterQueues " if len(queues) > 1 else "ClusterQueue ") + ", ".join(
            f"'{q}'" for q in queues[:5]) + (" and more" if len(queues) > 5 else "")
        found.append(violation(
            obj, CLUSTER_QUEUE_COVERS_POD_RESOURCES.name, f"{where}.{field}", resource,
            f"{shown} quota {resource!r}, but {why}: the quota is out of play",
            f"remove the entry that drops or replaces {resource!r}, or take {resource!r} out of these queues' quota",
            message=f"The Kueue Configuration in {where} of the {obj.describe()} takes quota out of play: "
                    f"{shown} quota {resource!r}, but {why}; remove the entry that drops or replaces "
                    f"{resource!r}, or take {resource!r} out of these queues' quota."))
    for namespace in tenants:
        if namespace in ("kube-system", counting.namespace):
            continue  # Kueue never manages these (pkg/config/validation.go); PROTECTED_NAMESPACES refuses them
        known = labels.get(namespace) or {kueue_counts.NAME_LABEL: namespace}
        if counting.selects(known):
            continue
        found.append(violation(
            obj, CLUSTER_QUEUE_COVERS_POD_RESOURCES.name, f"{where}.managedJobsNamespaceSelector", counting.selector,
            f"the tenant namespace '{namespace}' (labels {dict(sorted(known.items()))}) is not selected, and Kueue "
            f"{kueue_counts.KUEUE_VERSION} ignores every job and pod of a namespace its managedJobsNamespaceSelector "
            "does not select, queue-name label or not (pkg/controller/jobframework/reconciler.go), and the chart's "
            "webhooks skip it too: its jobs and pods run uncounted",
            f"select '{namespace}', e.g. with {{matchExpressions: [{{key: {kueue_counts.NAME_LABEL}, operator: "
            f"NotIn, values: [kube-system, {counting.namespace}]}}]}}, or label the namespace so the selector "
            "matches it"))
    for framework, users in sorted(need.items()):
        if counting.manages(framework):
            continue
        shown = ", ".join(users[:3]) + (" and more" if len(users) > 3 else "")
        found.append(violation(
            obj, CLUSTER_QUEUE_COVERS_POD_RESOURCES.name,
            f"{where}.integrations.frameworks", sorted(counting.frameworks),
            f"the stack runs {shown}, and without the '{framework}' integration Kueue neither gates nor counts their "
            "pods", f"add '{framework}' to integrations.frameworks (the stack's kueue.integrations)"))
    return found


def covered(cq: KubeObject) -> set[str]:
    """The resources a ClusterQueue covers: every resource group's coveredResources and its flavors' resource
    names. Raises UnknownValueError."""
    names: set[str] = set()
    for group in as_list(get(cq.spec, "resourceGroups")):
        names |= {str(r) for r in as_list(get(group, "coveredResources"))}
        for flavor in as_list(get(group, "flavors")):
            names |= {str(get(r, "name")) for r in as_list(get(flavor, "resources"))}
    return names


def check_cluster_queue_covers_pod_resources(objects: Iterable[KubeObject],
                                             configured_prefixes: Sequence[str] = (),
                                             inference_names: Optional[Iterable[str]] = None,
                                             kueue_namespace: str = "kueue-system") -> list[Violation]:
    """CLUSTER_QUEUE_COVERS_POD_RESOURCES over the whole stack (the four parts of the module docstring).

    Args:
        objects: every Kubernetes object of the stack. configured_prefixes: policy option `excludeResourcePrefixes`
            (a Kueue the stack does not install: then also judged against the quota, part 2). inference_names: the
            stack's inference ClusterQueues. kueue_namespace: Kueue's namespace when a Configuration has none.
    Returns:
        One Violation per ClusterQueue that leaves cpu or memory uncovered and not excluded, naming both fixes; the
        violations of `check_kueue_counts`; one per ClusterQueue resource `configured_prefixes` drops.
    """
    objects = list(objects)
    prefixes = excluded_prefixes(objects, configured_prefixes)
    found: list[Violation] = check_kueue_counts(objects, inference_names or (), kueue_namespace)
    # The option stands for a Kueue the stack does not install; a Configuration of the stack is judged above.
    alone = () if found_configurations(objects, kueue_namespace)[0] else tuple(str(p) for p in configured_prefixes)
    option = kueue_counts.Counting("", {}, frozenset(), alone, {}, False)
    for cq in (o for o in objects if o.is_kueue("ClusterQueue")):

        def check(cq: KubeObject = cq) -> list[Violation]:
            if not as_list(get(cq.spec, "resourceGroups")):
                return []
            names = covered(cq)
            dropped = [(name, option.uncounted(name)) for name in sorted(names)]
            out = [violation(
                cq, CLUSTER_QUEUE_COVERS_POD_RESOURCES.name, "spec.resourceGroups", name,
                f"the cluster's Kueue leaves {name!r} out: {why} (policy option excludeResourcePrefixes)",
                f"remove the prefix from kueue.resources.excludeResourcePrefixes, or stop quoting {name!r}")
                for name, why in dropped if why is not None]
            missing = [r for r in POD_RESOURCES if r not in names and not any(r.startswith(p) for p in prefixes)]
            if not missing:
                return out
            shown = " and ".join(missing)
            return out + [violation(
                cq, CLUSTER_QUEUE_COVERS_POD_RESOURCES.name, "spec.resourceGroups", sorted(names),
                f"every pod requests {shown}, and Kueue admits a workload only when its ClusterQueue covers each "
                f"requested resource, so this ClusterQueue would admit nothing",
                f"cover {shown} in the quota (e.g. nominalQuota {{{', '.join(f'{r}: ...' for r in missing)}}}), or "
                f"exclude them from Kueue's accounting with kueue.resources.excludeResourcePrefixes "
                f"{list(missing)} (the manager Configuration's resources.excludeResourcePrefixes)")]

        found.extend(guarded(cq, check))
    return found


EXCLUDE_RESOURCE_PREFIXES = names(
    "excludeResourcePrefixes",
    "Resource name prefixes the cluster's Kueue excludes from accounting (resources.excludeResourcePrefixes of its "
    "Configuration).")


def _check(objects: Sequence[KubeObject], options: Mapping[str, Any]) -> list[Violation]:
    """The policy's check, with the Configuration's excluded prefixes and the stack's inference queues."""
    return check_cluster_queue_covers_pod_resources(
        objects, EXCLUDE_RESOURCE_PREFIXES.read(options), inference_queue_names(objects, options))


CLUSTER_QUEUE_COVERS_POD_RESOURCES: Declaration = Declaration(
    name="cluster-queue-covers-pod-resources",
    description="Kueue counts every pod of the stack: its Configuration counts every resource the ClusterQueues "
                "quota, selects every tenant namespace and manages every kind the stack runs; every ClusterQueue "
                "covers cpu and memory, or the Configuration excludes them.",
    promise=Promise.KUEUE_COUNTS, level=Level.MANDATORY, scope=Scope.STACK,
    check=_check, options=(EXCLUDE_RESOURCE_PREFIXES, *ROLE_OPTIONS))
