"""NO_HELM_RELEASE: no Helm v3 Release, whose objects the pack cannot see.

A Helm v3 `Release` (`kubernetes:helm.sh/v3:Release`, pulumi-kubernetes 4.25) installs its chart inside the provider,
so its objects never reach the pack; `helm.sh/v4:Chart` registers every object of the chart as its own resource.
"""
from __future__ import annotations

from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.objects import KubeObject, guarded, violation
from .vocabulary.plain import plain
from .vocabulary.values import Violation, get


def check_helm_release(obj: KubeObject, policy: str) -> list[Violation]:
    """NO_HELM_RELEASE for one object: a `kubernetes:helm.sh/v3:Release` is refused.

    Args:
        obj: any object. policy: the policy name for the Violation.
    Returns:
        One Violation (field "chart", its value) for a Helm v3 Release: the provider installs its chart itself, so
        the pack never sees the ClusterQueues, ConfigMaps or Deployments it creates; nothing for anything else.
    """
    if not (obj.group == "helm.sh" and obj.version == "v3" and obj.kind == "Release"):
        return []

    def check() -> list[Violation]:
        return [violation(
            obj, policy, "chart", plain(get(obj.props, "chart")),
            "a Helm v3 Release installs its chart inside the provider, so the policy pack cannot see or judge the "
            "objects it creates",
            "install the chart with kubernetes:helm.sh/v4:Chart (pulumi_kubernetes.helm.v4.Chart), which registers "
            "every object of the chart as a resource the pack judges")]

    return guarded(obj, check)


NO_HELM_RELEASE: Declaration = Declaration(
    name="no-helm-release",
    description="No Helm v3 Release, whose objects the pack cannot see: use kubernetes:helm.sh/v4:Chart.",
    promise=Promise.WELL_FORMED, level=Level.MANDATORY, scope=Scope.RESOURCE,
    check=lambda obj, options: check_helm_release(obj, NO_HELM_RELEASE.name))
