"""cluster-queue-covers-pod-resources (stack policy): every ClusterQueue covers what every pod requests.

Every pod requests cpu and memory (containers without requests are defaulted from limits or LimitRanges, and Kueue
counts the pod overhead), and Kueue admits a Workload only when each resource it requests is covered by a resource
group of its ClusterQueue (`pkg/scheduler/flavorassigner`: "resource X unavailable in ClusterQueue") unless the
manager Configuration drops the resource before admission: `resources.excludeResourcePrefixes`
(apis/config/v1beta2/configuration_types.go, Resources.ExcludeResourcePrefixes). A ClusterQueue that covers only
GPUs (our guide's symmetric example) therefore admits nothing.

The excluded prefixes come from the stack's Kueue Configuration (a ConfigMap or chart values carrying one, see
`manager_config.configurations`) and from the policy option `excludeResourcePrefixes` (generated from the stack's
`kueue.resources` for a Kueue the stack does not install).
"""
from __future__ import annotations

from typing import Iterable, Sequence

import yaml

from .manager_config import configurations
from .objects import KubeObject, guarded, skipped, violation
from .values import UnknownValueError, Violation, as_list, get, is_map

POLICY = "cluster-queue-covers-pod-resources"
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
            continue  # the kueue-manager-config rule reports these
    return prefixes


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
                                             configured_prefixes: Sequence[str] = ()) -> list[Violation]:
    """cluster-queue-covers-pod-resources over the whole stack.

    Args:
        objects: every Kubernetes object of the stack. configured_prefixes: policy option `excludeResourcePrefixes`.
    Returns:
        One Violation per ClusterQueue that leaves cpu or memory uncovered and not excluded, naming both fixes.
    """
    objects = list(objects)
    prefixes = excluded_prefixes(objects, configured_prefixes)
    found: list[Violation] = []
    for cq in (o for o in objects if o.is_kueue("ClusterQueue")):

        def check(cq: KubeObject = cq) -> list[Violation]:
            if not as_list(get(cq.spec, "resourceGroups")):
                return []
            names = covered(cq)
            missing = [r for r in POD_RESOURCES if r not in names and not any(r.startswith(p) for p in prefixes)]
            if not missing:
                return []
            shown = " and ".join(missing)
            return [violation(
                cq, POLICY, "spec.resourceGroups", sorted(names),
                f"every pod requests {shown}, and Kueue admits a workload only when its ClusterQueue covers each "
                f"requested resource, so this ClusterQueue would admit nothing",
                f"cover {shown} in the quota (e.g. nominalQuota {{{', '.join(f'{r}: ...' for r in missing)}}}), or "
                f"exclude them from Kueue's accounting with kueue.resources.excludeResourcePrefixes "
                f"{list(missing)} (the manager Configuration's resources.excludeResourcePrefixes)")]

        found.extend(guarded(cq, check))
    return found
