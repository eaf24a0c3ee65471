"""previewIdentity through the real pulumi CLI (issue 14.2): `up` of the staging stack in render mode, with Kueue's
chart from its Go module and the policy pack on, registers the preview identity's RBAC as children of one
PreviewIdentity component, and the RBAC grants get/list/watch on exactly the kinds of every object the stack
rendered: the cohorts, the admission policies, the TrainingRuntime, every object of Kueue's real chart, and the
identity's own Namespace, ServiceAccount and RBAC."""

from __future__ import annotations

from pathlib import Path

import pytest

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.preview_rbac import identity_plan, read_access
from tests.integration.project import Project, dump, manifests

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

RBAC_TYPES = {f"kubernetes:rbac.authorization.k8s.io/v1:{kind}"
              for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")}


def _token(manifest: dict) -> str:
    api = manifest["apiVersion"] if "/" in manifest["apiVersion"] else f"core/{manifest['apiVersion']}"
    return f"kubernetes:{api}:{manifest['kind']}"


def test_the_stack_registers_read_only_rbac_for_exactly_its_kinds(project: Project, tmp_path: Path):
    target = tmp_path / "rendered"
    project.make_offline("staging", target)  # render mode, Kueue's chart from the pinned Go module
    project.set_config("staging", "trainingRuntime", {"image": "registry.example/trainer:1",
                                                      "requests": {"cpu": "4", "memory": "16Gi"},
                                                      "limits": {"nvidia.com/gpu": "1"}})
    config = project.config("staging")
    assert config["previewIdentity"] == {"kind": "ServiceAccount", "name": "preview",
                                         "namespace": "kueue-cohorts-preview"}
    plan = identity_plan(load_settings(config))
    assert plan is not None

    stack = project.open("staging")
    result = stack.up(**project.kwargs(stack))  # with the policy pack and policy/config/staging.json
    assert result.summary.result == "succeeded", result.stdout

    # The state: one PreviewIdentity component, every RBAC object (and the Namespace, ServiceAccount) its child.
    resources = project.resources(stack)
    [component] = [r for r in resources if r["type"] == "kueue-cohorts:preview:PreviewIdentity"]
    children = [r for r in resources if r.get("parent") == component["urn"]]
    assert sorted(r["type"] for r in children) == sorted(_token(m) for m in plan.manifests())
    assert all(r.get("parent") == component["urn"] for r in resources if r["type"] in RBAC_TYPES
               and (r["inputs"]["metadata"].get("labels") or {}).get("kueue-cohorts/role") == "preview-identity")
    [cluster_role] = [r for r in children if r["type"].endswith(":ClusterRole")]
    assert cluster_role["inputs"]["rules"] == plan.rbac[0]["rules"], dump(cluster_role["inputs"])

    # The render: every object the stack wrote, Kueue's chart included; the RBAC reads exactly their kinds.
    rendered = manifests(target)
    assert any(m["kind"] == "CustomResourceDefinition" for m in rendered)  # the real chart was rendered
    assert read_access(rendered) == plan.access, dump({"rendered": read_access(rendered).__dict__,
                                                       "plan": plan.access.__dict__})
    ours = [m for m in rendered if (m["metadata"].get("labels") or {}).get("kueue-cohorts/role") == "preview-identity"]
    granted = {(m["kind"], m["metadata"].get("namespace")): m["rules"] for m in ours if "rules" in m}
    assert granted == {(m["kind"], m["metadata"].get("namespace")): m["rules"] for m in plan.rbac if "rules" in m}
    assert all(rule["verbs"] == ["get", "list", "watch"] for rules in granted.values() for rule in rules)
    assert ("", "secrets") not in plan.access.cluster and ("", "secrets") not in plan.access.namespaced["kueue-system"]
