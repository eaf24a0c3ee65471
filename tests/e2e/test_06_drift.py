"""(e) Drift: a ClusterQueue's borrowingLimit changed out of band (as `kubectl edit` does: an update by another field
manager) shows in `pulumi preview --refresh`, and `pulumi up --refresh` restores it. A set-typed list of a guardrail
binding that other field managers co-own is taken back by the next `up` (components/stack/ownership.py)."""

import yaml
from e2e_support import KUEUE, REPO
from kubernetes import client as k8s


def _limits(cq: dict) -> dict[str, str]:
    return {r["name"]: r.get("borrowingLimit") for g in cq["spec"]["resourceGroups"]
            for f in g["flavors"] for r in f["resources"]}


def test_borrowing_limit_drift_is_previewed_and_restored(cluster, project, dev_stack):
    before = cluster.cluster_queue("c12-training-cq")
    want = _limits(before)
    assert want["nvidia.com/gpualloc"] not in (None, "0")
    resources = before["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    index = next(i for i, r in enumerate(resources) if r["name"] == "nvidia.com/gpualloc")
    cluster.custom.patch_cluster_custom_object(
        *KUEUE, "clusterqueues", "c12-training-cq",
        [{"op": "replace", "path": f"/spec/resourceGroups/0/flavors/0/resources/{index}/borrowingLimit",
          "value": "0"}],
        field_manager="kubectl-edit", _content_type="application/json-patch+json")
    assert _limits(cluster.cluster_queue("c12-training-cq"))["nvidia.com/gpualloc"] == "0"

    preview = project.run(dev_stack, "preview", refresh=True, diff=True)
    assert preview.change_summary.get("update", 0) >= 1, preview.change_summary
    assert "borrowingLimit" in preview.stdout

    project.run(dev_stack, "up", refresh=True)
    assert _limits(cluster.cluster_queue("c12-training-cq")) == want


RAILS = ("kueue-cohorts.c12-shared.tenant-label", "kueue-cohorts.c12-shared.inference-rollout-fits-nominal")


def _actions(cluster, name: str) -> list[str]:
    return k8s.AdmissionregistrationV1Api(cluster.api).read_validating_admission_policy_binding(
        name).spec.validation_actions


def _dev_file(**admission) -> dict:
    document = yaml.safe_load((REPO / "stacks" / "Pulumi.dev.yaml").read_text())
    if admission:
        document["config"]["kueue-cohorts:admission"] = admission
    return document


def test_a_set_list_another_manager_co_owns_is_taken_back_by_the_next_up(cluster, project, dev_stack):
    """Two guardrail bindings' `validationActions` (a set-typed list: server-side apply merges it) written by others:
    one weakened to [Warn] and restored to [Deny] by hand (an Update: `kubectl-edit` then owns Deny alone), the other
    applied with the same [Deny] by another tool's server-side apply (an Apply: Deny co-owned). Without the take-back,
    the stack's `up` with [Warn, Audit] is refused by the API server as [Deny, Warn, Audit] (Deny and Warn together);
    with it, both bindings end as the stack declares, then back at [Deny]."""
    admission = k8s.AdmissionregistrationV1Api(cluster.api)
    edited, applied = RAILS
    admission.patch_validating_admission_policy_binding(edited, {"spec": {"validationActions": ["Warn"]}},
                                                        field_manager="kubectl-edit")
    admission.patch_validating_admission_policy_binding(edited, {"spec": {"validationActions": ["Deny"]}},
                                                        field_manager="kubectl-edit")
    admission.patch_validating_admission_policy_binding(
        applied, {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                  "metadata": {"name": applied}, "spec": {"validationActions": ["Deny"]}},
        field_manager="argocd-controller", _content_type="application/apply-patch+yaml")
    try:
        project.add_stack(dev_stack, _dev_file(validationActions=["Warn", "Audit"]))
        up = project.run(dev_stack, "up")
        assert up.summary.result == "succeeded"
        assert {name: _actions(cluster, name) for name in RAILS} == {name: ["Warn", "Audit"] for name in RAILS}
        for name, manager in ((edited, '"kubectl-edit" (Update)'), (applied, '"argocd-controller" (Apply)')):
            assert f"{name}: spec.validationActions from field manager {manager}" in up.stdout, up.stdout
    finally:
        project.add_stack(dev_stack, REPO / "stacks" / "Pulumi.dev.yaml")
        project.run(dev_stack, "up")
    assert {name: _actions(cluster, name) for name in RAILS} == {name: ["Deny"] for name in RAILS}
