"""In-cluster guardrails on the real kube-apiserver: the dev stack's ValidatingAdmissionPolicies refuse what the
rule book refuses (parity, object by object, through server-side dry-run), a kubectl-style patch of the inference
ClusterQueue and an intruder's tenant label are denied with the rule's message, `[Warn, Audit]` lets them through
with a warning, and `pulumi up`, drift repair and `destroy` still work under the stack's own identity."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from e2e_support import KUEUE, PRIORITY_LABEL, REPO, wait_for
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from kubernetes import client as k8s
from kubernetes import config as kconfig

from kueue_cohorts.components.model.admission import stack_guardrails
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.components.settings import SANDBOX_ADMIN, parse_settings, raw_from_stack_file
from kueue_cohorts.policy.rules.book.admission import Request, judge, kube_object

DEV = parse_settings(raw_from_stack_file(REPO / "stacks" / "Pulumi.dev.yaml"))
RAILS = stack_guardrails(DEV)
LABEL = DEV.inference_training.namespace_label
INFERENCE_CQ = DEV.inference_training.inference.cluster_queue
INFERENCE_TENANT = DEV.inference_training.inference.tenant or INFERENCE_CQ
INTRUDER = "e2e-intruder"
ADMIN_GROUPS = ("system:masters", "system:authenticated")
INTRUDER_GROUPS = ("system:masters", "system:authenticated")  # cluster-admin by RBAC: only admission stops it
ADMISSION = ("admissionregistration.k8s.io", "v1")
PARITY = hsettings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


def _rendered(kind: str, name: str) -> dict:
    return copy.deepcopy(next(r.manifest for r in render_stack(DEV) if r.kind == kind and r.name == name))


def _verdict(call) -> tuple[str, str | None]:
    """Run an API call; return ("allowed", None), ("denied", <policy name>) for a denial by one of our
    ValidatingAdmissionPolicies, or ("other", message) for any other refusal (schema, Kueue's webhook)."""
    try:
        call()
        return "allowed", None
    except k8s.ApiException as exc:
        message = json.loads(exc.body)["message"]
        prefix = "ValidatingAdmissionPolicy '"
        if prefix in message:
            return "denied", message.split(prefix, 1)[1].split("'", 1)[0]
        return "other", message


_CONFLICT = "the object has been modified"


def _replace_verdict(cluster, plural: str, name: str, body: dict) -> tuple[tuple[str, str | None], dict]:
    """A dry-run replace of the live cluster-scoped Kueue object `name` with `body` at the live resourceVersion;
    returns (its `_verdict`, the live object it replaced). A write between the read and the replace (Kueue updates a
    ClusterQueue's status at any time) is a 409 Conflict, optimistic concurrency and no verdict: read again and
    retry, up to 10 times."""
    for _ in range(10):
        live = cluster.custom.get_cluster_custom_object(*KUEUE, plural, name)
        body["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
        api = _verdict(lambda: cluster.custom.replace_cluster_custom_object(*KUEUE, plural, name, body,
                                                                             dry_run="All"))
        if not (api[0] == "other" and _CONFLICT in (api[1] or "")):
            return api, live
    raise AssertionError(f"{plural}/{name} kept changing under 10 dry-run replaces: {api}")


def _python(obj: dict, old: dict | None = None, user: str = SANDBOX_ADMIN, groups=ADMIN_GROUPS) -> set[str]:
    request = Request(kube_object(obj), kube_object(old) if old else None, user, tuple(groups))
    return {rail.name for rail, _ in judge(RAILS, request)}


def _assert_parity(api: tuple[str, str | None], python: set[str], what: object) -> None:
    state, detail = api
    assert state != "other" or not python, f"the apiserver refused {what} for another reason: {detail}"
    assert (state == "denied") == bool(python), f"{what}: apiserver {api}, rule book {sorted(python)}"
    if state == "denied":
        assert detail in python, f"{what}: denied by {detail}, the rule book names {sorted(python)}"


@pytest.fixture(scope="module")
def guarded(cluster, dev_stack) -> str:
    """The dev stack with its guardrails in effect (a policy starts judging once the apiserver has loaded it:
    polled with a dry-run that only the guardrail refuses)."""
    broken = _rendered("ClusterQueue", INFERENCE_CQ)
    broken["metadata"] = {"name": "e2e-guardrail-probe", "labels": {"kueue-cohorts/role": "inference"}}
    del broken["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"]
    wait_for(lambda: _verdict(lambda: cluster.custom.create_cluster_custom_object(
        *KUEUE, "clusterqueues", broken, dry_run="All"))[0] == "denied", 60, "the guardrails to take effect")
    yield dev_stack
    for name in ("e2e-parity-ns", "e2e-undeclared"):
        try:
            cluster.core.delete_namespace(name)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise


@pytest.fixture(scope="module")
def intruder(sandbox) -> k8s.ApiClient:
    """An API client of the sandbox admin impersonating a user outside the stack's identities (group
    system:masters, so RBAC allows everything and only admission decides)."""
    api = kconfig.new_client_from_config(config_file=str(sandbox.paths.kubeconfig))
    api.set_default_header("Impersonate-User", INTRUDER)
    api.set_default_header("Impersonate-Group", "system:masters")
    return api


# --- parity: the rule book's verdict is the apiserver's ----------------------------------------------------------

QUANTITIES = st.sampled_from([None, "0", 0, "0m", "0Gi", "1", 1, "500m", "2Gi", "-1"])
VALID_SELECTORS = [{"matchLabels": {LABEL: "t"}},
                   {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a"]}]}]
# Compliant values drawn more often, so that one broken property at a time decides many examples (the apiserver
# names only the first policy that denies).
SELECTORS = st.sampled_from(VALID_SELECTORS * 3 + [None, {}, {"matchLabels": {}}, {"matchExpressions": []}])
RECLAIMS = st.sampled_from(["Any"] * 4 + [None, "Never", "LowerPriority"])


@hsettings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=st.sampled_from(["c12-inference-cq", "c12-training-cq", "e2e-parity-cq"]),
       role=st.sampled_from([None, "inference", "training"]), index=st.integers(0, 4), limit=QUANTITIES,
       reclaim=RECLAIMS, selector=SELECTORS)
def test_cluster_queue_verdicts_equal_the_rule_book(cluster, guarded, name, role, index, limit, reclaim, selector):
    body = _rendered("ClusterQueue", "c12-inference-cq")
    body["metadata"] = {"name": name, "labels": {"app.kubernetes.io/managed-by": "kueue-cohorts"}}
    if role:
        body["metadata"]["labels"]["kueue-cohorts/role"] = role
    entry = body["spec"]["resourceGroups"][0]["flavors"][0]["resources"][index]
    entry.pop("borrowingLimit")
    if limit is not None:
        entry["borrowingLimit"] = limit
    body["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    if reclaim:
        body["spec"]["preemption"]["reclaimWithinCohort"] = reclaim
    body["spec"].pop("namespaceSelector")
    if selector is not None:
        body["spec"]["namespaceSelector"] = selector
    live = None
    if name == "e2e-parity-cq":
        api = _verdict(lambda: cluster.custom.create_cluster_custom_object(*KUEUE, "clusterqueues", body,
                                                                            dry_run="All"))
    else:
        api, live = _replace_verdict(cluster, "clusterqueues", name, body)
    # The apiserver judges the object after defaulting: Kueue's CRD writes reclaimWithinCohort: Never when absent.
    judged = copy.deepcopy(body)
    judged["spec"]["preemption"].setdefault("reclaimWithinCohort", "Never")
    _assert_parity(api, _python(judged, live), body)


def test_a_queue_without_cohort_never_borrows_so_both_sides_let_it_through(cluster, guarded):
    body = _rendered("ClusterQueue", "c12-inference-cq")
    body["metadata"]["name"] = "e2e-no-cohort-cq"
    del body["spec"]["cohortName"]
    for entry in body["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
        del entry["borrowingLimit"]
    body["spec"]["preemption"].pop("borrowWithinCohort", None)
    api = _verdict(lambda: cluster.custom.create_cluster_custom_object(*KUEUE, "clusterqueues", body, dry_run="All"))
    assert api == ("allowed", None) and _python(body) == set()


@PARITY
@given(name=st.sampled_from(["c12-inference-prio", "c12-training-prio", "e2e-parity-prio"]),
       role=st.sampled_from([None, "inference", "training", "tenant"]),
       value=st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([9, 10, 11, 999, 1000, 1001])))
def test_priority_class_verdicts_equal_the_rule_book(cluster, guarded, name, role, value):
    body = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
            "metadata": {"name": name, "labels": {"kueue-cohorts/role": role} if role else {}}, "value": value}
    live = None
    if name == "e2e-parity-prio":
        api = _verdict(lambda: cluster.custom.create_cluster_custom_object(*KUEUE, "workloadpriorityclasses", body,
                                                                            dry_run="All"))
    else:
        api, live = _replace_verdict(cluster, "workloadpriorityclasses", name, body)
    _assert_parity(api, _python(body, live), body)


TENANT_VALUES = st.sampled_from([None, INFERENCE_TENANT, "c12-training-cq", "", "someone-else"])


@PARITY
@given(before=TENANT_VALUES, after=TENANT_VALUES, create=st.booleans(), as_intruder=st.booleans())
def test_tenant_label_verdicts_equal_the_rule_book(cluster, guarded, intruder, before, after, create, as_intruder):
    api_client = intruder if as_intruder else cluster.api
    user, groups = (INTRUDER, INTRUDER_GROUPS) if as_intruder else (SANDBOX_ADMIN, ADMIN_GROUPS)
    core = k8s.CoreV1Api(api_client)
    new = {"apiVersion": "v1", "kind": "Namespace",
           "metadata": {"name": "e2e-parity-ns", "labels": {} if after is None else {LABEL: after}}}
    if create:
        new["metadata"]["name"] = "e2e-parity-new-ns"
        api = _verdict(lambda: core.create_namespace(new, dry_run="All"))
        _assert_parity(api, _python(new, None, user, groups), new)
        return
    cluster.ensure_namespace("e2e-parity-ns")
    cluster.core.patch_namespace("e2e-parity-ns", {"metadata": {"labels": {LABEL: before}}})  # as the stack
    old = cluster.core.read_namespace("e2e-parity-ns").to_dict()
    old = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "e2e-parity-ns",
                                                                  "labels": old["metadata"]["labels"]}}
    new["metadata"]["labels"] = {**{k: v for k, v in old["metadata"]["labels"].items() if k != LABEL},
                                 **new["metadata"]["labels"]}
    api = _verdict(lambda: core.patch_namespace("e2e-parity-ns", {"metadata": {"labels": {LABEL: after}}},
                                                dry_run="All"))
    _assert_parity(api, _python(new, old, user, groups), (before, after, user))


# --- the issue's scenarios -----------------------------------------------------------------------------------------


def _gpualloc_index(cq: dict) -> int:
    resources = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    return next(i for i, r in enumerate(resources) if r["name"] == "nvidia.com/gpualloc")


def _borrow_one(cluster, **kwargs):
    cq = cluster.cluster_queue(INFERENCE_CQ)
    return cluster.custom.patch_cluster_custom_object_with_http_info(
        *KUEUE, "clusterqueues", INFERENCE_CQ,
        [{"op": "replace", "path": f"/spec/resourceGroups/0/flavors/0/resources/{_gpualloc_index(cq)}/borrowingLimit",
          "value": "1"}], field_manager="kubectl-patch", _content_type="application/json-patch+json", **kwargs)


def test_kubectl_patch_of_inference_borrowing_limit_is_denied_with_the_rules_message(cluster, guarded):
    with pytest.raises(k8s.ApiException) as err:
        _borrow_one(cluster)
    message = json.loads(err.value.body)["message"]
    rail = next(r for r in RAILS if r.policy == "inference-borrowing-limit-zero")
    assert f"ValidatingAdmissionPolicy '{rail.name}'" in message
    assert f"ClusterQueue '{INFERENCE_CQ}' breaks the kueue-cohorts rule inference-borrowing-limit-zero" in message
    assert "borrowingLimit must be an explicit 0" in message and "fix: set borrowingLimit to 0" in message
    cq = cluster.cluster_queue(INFERENCE_CQ)
    assert cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][_gpualloc_index(cq)]["borrowingLimit"] == "0"


def test_an_intruder_cannot_give_an_undeclared_namespace_the_inference_tenant(cluster, guarded, intruder):
    cluster.ensure_namespace("e2e-undeclared")
    with pytest.raises(k8s.ApiException) as err:
        k8s.CoreV1Api(intruder).patch_namespace("e2e-undeclared", {"metadata": {"labels": {LABEL: INFERENCE_TENANT}}})
    assert err.value.status == 403
    message = json.loads(err.value.body)["message"]
    assert "kueue-cohorts rule tenant-label" in message and f"(requested by {INTRUDER})" in message
    assert LABEL not in (cluster.core.read_namespace("e2e-undeclared").metadata.labels or {})
    # Other labels stay the namespace owner's business.
    k8s.CoreV1Api(intruder).patch_namespace("e2e-undeclared", {"metadata": {"labels": {"team": "x"}}})
    assert cluster.core.read_namespace("e2e-undeclared").metadata.labels["team"] == "x"


def _stack_file(**admission) -> dict:
    document = yaml.safe_load((REPO / "stacks" / "Pulumi.dev.yaml").read_text())
    if admission:
        document["config"]["kueue-cohorts:admission"] = admission
    return document


def test_warn_and_audit_let_the_patch_through_with_a_warning_then_deny_and_up_repair_it(cluster, project, guarded):
    project.add_stack(guarded, _stack_file(validationActions=["Warn", "Audit"]))
    try:
        result = project.run(guarded, "up")
        assert result.summary.result == "succeeded"
        binding = cluster.custom.get_cluster_custom_object(*ADMISSION, "validatingadmissionpolicybindings",
                                                           RAILS[0].name)
        assert binding["spec"]["validationActions"] == ["Warn", "Audit"]

        def warned():
            try:
                _, _, headers = _borrow_one(cluster)
            except k8s.ApiException:
                return None  # the Deny binding is still loaded
            return headers.get("Warning")

        warning = wait_for(warned, 60, "the Warn binding to take effect")
        assert "inference-borrowing-limit-zero" in warning
    finally:
        project.add_stack(guarded, _stack_file())
    result = project.run(guarded, "up", refresh=True)  # Deny again, and the engine repairs the borrowingLimit
    assert result.summary.result == "succeeded"
    cq = cluster.cluster_queue(INFERENCE_CQ)
    assert cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][_gpualloc_index(cq)]["borrowingLimit"] == "0"
    binding = cluster.custom.get_cluster_custom_object(*ADMISSION, "validatingadmissionpolicybindings", RAILS[0].name)
    assert binding["spec"]["validationActions"] == ["Deny"]


def test_drift_of_the_tenant_label_and_quota_is_repaired_by_the_stacks_identity(cluster, project, guarded):
    namespace = DEV.inference_training.inference.namespaces[0]
    cluster.core.patch_namespace(namespace, {"metadata": {"labels": {LABEL: None}}}, field_manager="kubectl-label")
    cq = cluster.cluster_queue(INFERENCE_CQ)
    cluster.custom.patch_cluster_custom_object(
        *KUEUE, "clusterqueues", INFERENCE_CQ,
        [{"op": "replace", "path": "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota", "value": "3"}],
        field_manager="kubectl-edit", _content_type="application/json-patch+json")
    assert LABEL not in (cluster.core.read_namespace(namespace).metadata.labels or {})

    result = project.run(guarded, "up", refresh=True)
    assert result.summary.result == "succeeded"
    assert cluster.core.read_namespace(namespace).metadata.labels[LABEL] == INFERENCE_TENANT
    repaired = cluster.cluster_queue(INFERENCE_CQ)
    assert repaired["spec"]["resourceGroups"] == cq["spec"]["resourceGroups"]


def _our_policies(cluster) -> set[str]:
    items = cluster.custom.list_cluster_custom_object(
        *ADMISSION, "validatingadmissionpolicies", label_selector="app.kubernetes.io/managed-by=kueue-cohorts")["items"]
    return {item["metadata"]["name"] for item in items}


def test_destroy_removes_the_guardrails_and_up_brings_them_back(cluster, project, guarded):
    assert _our_policies(cluster) == {rail.name for rail in RAILS}
    project.run(guarded, "destroy")
    assert _our_policies(cluster) == set()
    assert not cluster.kueue_objects("clusterqueues")
    result = project.run(guarded, "up")
    assert result.summary.result == "succeeded"
    assert _our_policies(cluster) == {rail.name for rail in RAILS}


# --- serving workloads in the inference namespace: replicas + surge within nominalQuota ------------------------------

INFERENCE_NS = DEV.inference_training.inference.namespaces[0]
SERVING_LABELS = {"kueue.x-k8s.io/queue-name": DEV.inference_training.inference.local_queue,
                  "kueue.x-k8s.io/priority-class": DEV.inference_training.inference.priority_class.name}


def _serving(kind: str, replicas: int, cpu: str, surge: object, gpu: bool) -> dict:
    """A Deployment or StatefulSet in the inference namespace with every field the apiserver would default written
    out, so the rule book judges what the admission policy sees."""
    requests = {"cpu": cpu, "memory": "1Gi"}
    if gpu:
        requests.update({"nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "20", "nvidia.com/gpumem": "2048"})
    spec: dict = {"replicas": replicas, "selector": {"matchLabels": {"app": "e2e-serving"}},
                  "template": {"metadata": {"labels": {"app": "e2e-serving", **SERVING_LABELS}},
                               "spec": {"containers": [{"name": "s", "image": "registry.k8s.io/pause:3.10",
                                                        "resources": {"requests": requests,
                                                                      "limits": {k: v for k, v in requests.items()
                                                                                 if "/" in k}}}]}}}
    if kind == "Deployment":
        spec["strategy"] = {"type": "Recreate"} if surge is None else {
            "type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": 1}}
    else:
        spec["serviceName"] = "e2e-serving"
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "e2e-serving", "namespace": INFERENCE_NS},
            "spec": spec}


@PARITY
@given(kind=st.sampled_from(["Deployment", "StatefulSet"]), replicas=st.integers(0, 5),
       cpu=st.sampled_from(["500m", "1", "3"]), surge=st.sampled_from([None, 0, 1, "0%", "25%", "100%"]),
       gpu=st.booleans())
def test_serving_workload_verdicts_equal_the_rule_book(cluster, guarded, kind, replicas, cpu, surge, gpu):
    body = _serving(kind, replicas, cpu, surge, gpu)
    apps = k8s.AppsV1Api(cluster.api)
    create = apps.create_namespaced_deployment if kind == "Deployment" else apps.create_namespaced_stateful_set
    _assert_parity(_verdict(lambda: create(INFERENCE_NS, body, dry_run="All")), _python(body), body)


def test_a_kubectl_deployment_at_full_quota_with_the_default_surge_is_denied(cluster, guarded):
    """The sandbox's finding: its surge pod stayed SchedulingGated on the first template change. Written without a
    strategy, as kubectl create does: the apiserver defaults maxSurge 25%, the guardrail refuses it."""
    body = _serving("Deployment", 1, "1", 0, True)
    del body["spec"]["strategy"]
    api = _verdict(lambda: k8s.AppsV1Api(cluster.api).create_namespaced_deployment(INFERENCE_NS, body, dry_run="All"))
    assert api == ("denied", f"kueue-cohorts.{DEV.inference_training.cohort}.inference-rollout-fits-nominal")
    body["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    assert _verdict(lambda: k8s.AppsV1Api(cluster.api).create_namespaced_deployment(
        INFERENCE_NS, body, dry_run="All")) == ("allowed", None)


# --- issue 26 item 7, issue 28 finding 5: who may grow the tree, outrank inference, relabel, reconfigure Kueue -------

COHORT = DEV.inference_training.cohort


def _refused_by(call, policy: str) -> str:
    """Run `call`; assert the apiserver refused it with our guardrail `policy` (HTTP 403 Forbidden, the reason of
    the identity-gated rails); return the message."""
    with pytest.raises(k8s.ApiException) as err:
        call()
    message = json.loads(err.value.body)["message"]
    assert err.value.status == 403, message
    assert f"ValidatingAdmissionPolicy 'kueue-cohorts.{COHORT}.{policy}'" in message, message
    assert f"kueue-cohorts rule {policy}" in message and f"(requested by {INTRUDER})" in message, message
    return message


def _hand_made_queue(name: str, cohort: str) -> dict:
    """The issue's queue: none of our labels, its own GPU nominalQuota, in `cohort`."""
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"cohortName": cohort, "namespaceSelector": {},
                     "resourceGroups": [{"coveredResources": ["nvidia.com/gpualloc"], "flavors": [
                         {"name": DEV.resource_flavor.name, "resources": [
                             {"name": "nvidia.com/gpualloc", "nominalQuota": "1"}]}]}]}}


def test_an_intruder_cannot_add_a_queue_or_cohort_to_the_inference_tree(cluster, guarded, intruder):
    custom = k8s.CustomObjectsApi(intruder)
    queue = _hand_made_queue("e2e-sneaky-cq", COHORT)
    message = _refused_by(lambda: custom.create_cluster_custom_object(*KUEUE, "clusterqueues", queue,
                                                                      dry_run="All"), "cohort-membership")
    assert "ClusterQueue 'e2e-sneaky-cq'" in message and "at spec.cohortName" in message
    assert _python(queue, None, INTRUDER, INTRUDER_GROUPS) == {f"kueue-cohorts.{COHORT}.cohort-membership"}
    child = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "e2e-sneaky-child"},
             "spec": {"parentName": COHORT}}
    message = _refused_by(lambda: custom.create_cluster_custom_object(*KUEUE, "cohorts", child, dry_run="All"),
                          "cohort-membership")
    assert "Cohort 'e2e-sneaky-child'" in message and "at spec.parentName" in message
    # the guarded Cohort itself (the stack writes none for dev: an intruder may not make one with quota)
    own = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": COHORT}, "spec": {}}
    _refused_by(lambda: custom.create_cluster_custom_object(*KUEUE, "cohorts", own, dry_run="All"),
                "cohort-membership")
    # moving one of the stack's queues out of the tree is refused too; a queue in another cohort is not ours
    assert _verdict(lambda: custom.patch_cluster_custom_object(
        *KUEUE, "clusterqueues", "c12-training-cq", {"spec": {"cohortName": "elsewhere"}}, dry_run="All")) == (
        "denied", f"kueue-cohorts.{COHORT}.cohort-membership")
    assert _verdict(lambda: custom.create_cluster_custom_object(
        *KUEUE, "clusterqueues", _hand_made_queue("e2e-other-team-cq", "other-team"), dry_run="All")) == (
        "allowed", None)
    # the stack's identity may (what `pulumi up` does when the stack declares a queue)
    assert _verdict(lambda: cluster.custom.create_cluster_custom_object(
        *KUEUE, "clusterqueues", queue, dry_run="All")) == ("allowed", None)
    assert not any(q["metadata"]["name"] == "e2e-sneaky-cq" for q in cluster.kueue_objects("clusterqueues"))


@pytest.mark.parametrize("value,refused", [(1_000_000, True), (1000, True), (2**31 - 1, True), (999, False)])
def test_an_intruder_cannot_create_a_priority_class_at_or_above_inference(cluster, guarded, intruder, value, refused):
    body = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
            "metadata": {"name": "e2e-vip", "labels": {"kueue-cohorts/role": "inference"}}, "value": value}
    custom = k8s.CustomObjectsApi(intruder)
    call = lambda: custom.create_cluster_custom_object(*KUEUE, "workloadpriorityclasses", body, dry_run="All")  # noqa: E731
    if refused:
        message = _refused_by(call, "priority-ceiling")
        assert "WorkloadPriorityClass 'e2e-vip'" in message and "set its value below 1000" in message
    else:
        assert _verdict(call) == ("allowed", None)
    assert bool(_python(body, None, INTRUDER, INTRUDER_GROUPS)) == refused


def _with_label(namespace: k8s.V1Namespace, value: str) -> k8s.V1Namespace:
    namespace.metadata.labels = {**(namespace.metadata.labels or {}), LABEL: value}
    return namespace


@pytest.mark.parametrize("path", ["namespace", "status", "finalize"])
def test_the_tenant_label_cannot_be_set_through_any_subresource(cluster, guarded, intruder, path):
    """Issue 28 finding 5: PUT /api/v1/namespaces/<name>, /status and /finalize all store metadata.labels."""
    cluster.ensure_namespace("e2e-undeclared")
    core = k8s.CoreV1Api(intruder)
    write = {"namespace": core.replace_namespace, "status": core.replace_namespace_status,
             "finalize": core.replace_namespace_finalize}[path]

    def attempt():
        return write("e2e-undeclared", _with_label(cluster.core.read_namespace("e2e-undeclared"), INFERENCE_TENANT))

    _refused_by(attempt, "tenant-label")
    assert LABEL not in (cluster.core.read_namespace("e2e-undeclared").metadata.labels or {})
    # Harm without the rail: the same write by the stack's identity is stored (so the subresource does carry labels).
    admin = {"namespace": cluster.core.replace_namespace, "status": cluster.core.replace_namespace_status,
             "finalize": cluster.core.replace_namespace_finalize}[path]
    admin("e2e-undeclared", _with_label(cluster.core.read_namespace("e2e-undeclared"), "e2e-probe"))
    assert cluster.core.read_namespace("e2e-undeclared").metadata.labels[LABEL] == "e2e-probe"
    cluster.core.patch_namespace("e2e-undeclared", {"metadata": {"labels": {LABEL: None}}})


def test_an_intruder_cannot_change_or_delete_kueues_manager_configuration(cluster, guarded, intruder):
    namespace = DEV.kueue.namespace
    cluster.ensure_namespace(namespace)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kueue-manager-config",
                                                                   "namespace": namespace},
            "data": {"controller_manager_config.yaml": "apiVersion: config.kueue.x-k8s.io/v1beta2\n"}}
    core = k8s.CoreV1Api(intruder)
    _refused_by(lambda: core.create_namespaced_config_map(namespace, body, dry_run="All"),
                "kueue-manager-config-writers")
    existed = True
    try:
        cluster.core.read_namespaced_config_map("kueue-manager-config", namespace)
    except k8s.ApiException as exc:
        assert exc.status == 404
        existed = False
        cluster.core.create_namespaced_config_map(namespace, body)  # the stack's identity may
    try:
        excluded = {"data": {"controller_manager_config.yaml":
                             "resources:\n  excludeResourcePrefixes: [nvidia.com/]\n"}}
        message = _refused_by(lambda: core.patch_namespaced_config_map("kueue-manager-config", namespace, excluded),
                              "kueue-manager-config-writers")
        assert "ConfigMap 'kueue-manager-config'" in message
        _refused_by(lambda: core.delete_namespaced_config_map("kueue-manager-config", namespace, dry_run="All"),
                    "kueue-manager-config-writers")
        # a label is not the Configuration; another ConfigMap of the namespace is not Kueue's
        core.patch_namespaced_config_map("kueue-manager-config", namespace, {"metadata": {"labels": {"x": "y"}}},
                                         dry_run="All")
        other = {**body, "metadata": {"name": "e2e-not-kueues", "namespace": namespace}}
        core.create_namespaced_config_map(namespace, other, dry_run="All")
    finally:
        if not existed:
            cluster.core.delete_namespaced_config_map("kueue-manager-config", namespace)


# --- issue 37 class 4: a trainer that holds its node past the reclaim budget, written by anyone ----------------------

TRAINING_NS = DEV.inference_training.training.namespaces[0]


def _trainer_object(kind: str, grace: int | None, prestop: dict | None) -> dict:
    """A TrainingRuntime, or a TrainJob whose runtime patch sets the trainer pod's grace period or preStop hook, in
    the training namespace (its ClusterQueue borrows inference's quota)."""
    container: dict = {"name": "node", "image": "registry.invalid/trainer:never-pulled"}
    if prestop is not None:
        container["lifecycle"] = {"preStop": prestop}
    pod: dict = {"containers": [container]}
    if grace is not None:
        pod["terminationGracePeriodSeconds"] = grace
    job = {"name": "node", "template": {"spec": {"template": {"spec": pod}}}}
    meta = {"name": "e2e-reclaim", "namespace": TRAINING_NS}
    if kind == "TrainingRuntime":
        return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind, "metadata": meta,
                "spec": {"mlPolicy": {"numNodes": 1}, "template": {"spec": {"replicatedJobs": [job]}}}}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind,
            "metadata": {**meta, "labels": {"kueue.x-k8s.io/queue-name": "c12-training-lq"}},
            "spec": {"suspend": True, "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime",
                                                     "name": "c12-checkpoint-runtime"},
                     "runtimePatches": [{"manager": "kueue-cohorts.example/e2e", "trainingRuntimeSpec": {
                         "template": {"spec": {"replicatedJobs": [job]}}}}]}}


@PARITY
@given(kind=st.sampled_from(["TrainingRuntime"]), grace=st.sampled_from([None, 30, 60, 61, 86400]),
       prestop=st.sampled_from([None, {"sleep": {"seconds": 10}}, {"sleep": {"seconds": 59}},
                                {"exec": {"command": ["sleep", "1"]}}]))
def test_reclaim_time_verdicts_equal_the_rule_book(cluster, guarded, kind, grace, prestop):
    """The reclaim-within-budget guardrail (dev: 60 s) against the real apiserver: a kubectl-made runtime is denied
    exactly when the rule book says so. A TrainJob cannot lengthen the hold at the pinned Trainer v2.2.1: its
    runtime patch is a PodSpecPatch without terminationGracePeriodSeconds or lifecycle (`pkg/apis/trainer/v1alpha1/
    trainjob_types.go`), which the apiserver prunes (found here: a patched preStop sleep of 59 s reached CEL as no
    hook); the rule judges such patches for Trainer >= 2.3 (kubeflow/trainer#3324)."""
    body = _trainer_object(kind, grace, prestop)
    plural = "trainingruntimes" if kind == "TrainingRuntime" else "trainjobs"
    custom = k8s.CustomObjectsApi(cluster.api)
    api = _verdict(lambda: custom.create_namespaced_custom_object("trainer.kubeflow.org", "v1alpha1", TRAINING_NS,
                                                                  plural, body, dry_run="All"))
    python = {name for name in _python(body) if name.endswith(".reclaim-within-budget")}
    _assert_parity(api, python, body)


def test_a_kubectl_runtime_with_a_one_day_grace_period_is_denied(cluster, guarded):
    """The issue's case in the cluster: the same runtime is denied at 86400 s and allowed at the guide's 60 s."""
    custom = k8s.CustomObjectsApi(cluster.api)

    def create(grace: int) -> tuple[str, str | None]:
        return _verdict(lambda: custom.create_namespaced_custom_object(
            "trainer.kubeflow.org", "v1alpha1", TRAINING_NS, "trainingruntimes",
            _trainer_object("TrainingRuntime", grace, None), dry_run="All"))

    assert create(86400) == ("denied", f"kueue-cohorts.{DEV.inference_training.cohort}.reclaim-within-budget")
    assert create(60) == ("allowed", None)


# --- issue 38 classes 3 and 4: priorities used, the request shapes a rail must see, the reserved environment --------

INFERENCE_PRIO = DEV.inference_training.inference.priority_class.name
TRAINING_PRIO = DEV.inference_training.training.priority_class.name
RUNTIME = DEV.training_runtime.name
PAUSE = {"name": "c", "image": "registry.k8s.io/pause:3.10"}


def _dry_create(api: k8s.ApiClient, body: dict):
    """A dry-run create of `body` through `api` (the typed API of its kind; CustomObjectsApi for CRDs); the call
    raises k8s.ApiException when refused."""
    namespace = body["metadata"]["namespace"]
    typed = {"Pod": lambda: k8s.CoreV1Api(api).create_namespaced_pod(namespace, body, dry_run="All"),
             "Job": lambda: k8s.BatchV1Api(api).create_namespaced_job(namespace, body, dry_run="All"),
             "Deployment": lambda: k8s.AppsV1Api(api).create_namespaced_deployment(namespace, body, dry_run="All")}
    if body["kind"] in typed:
        return typed[body["kind"]]
    group, version = body["apiVersion"].split("/")
    plural = {"JobSet": "jobsets", "TrainJob": "trainjobs"}[body["kind"]]
    return lambda: k8s.CustomObjectsApi(api).create_namespaced_custom_object(group, version, namespace, plural, body,
                                                                             dry_run="All")


def _pod_template(label, pod_class) -> dict:
    spec: dict = {"restartPolicy": "Never", "containers": [dict(PAUSE)]}
    if pod_class:
        spec["priorityClassName"] = pod_class
    return {"metadata": {"labels": {PRIORITY_LABEL: label} if label else {}}, "spec": spec}


def _priority_workload(kind: str, namespace: str, label, pod_class, on_template: bool) -> dict:
    """A workload the tenant could write: the Kueue priority label on the object or on its pod templates, and its
    pods' priorityClassName."""
    own = {PRIORITY_LABEL: label} if label and (not on_template or kind in ("Pod", "TrainJob")) else {}
    template = _pod_template(label if on_template else None, pod_class)
    name = f"e2e-prio-{kind.lower()}"
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": own},
                "spec": template["spec"]}
    spec = {"Job": {"template": template},
            "Deployment": {"selector": {"matchLabels": {"app": name}},
                           "template": {**template, "metadata": {"labels": {
                               **template["metadata"]["labels"], "app": name}}}},
            "JobSet": {"replicatedJobs": [{"name": "r", "template": {"spec": {"template": template}}}]},
            "TrainJob": {"runtimeRef": {"name": RUNTIME, "kind": "TrainingRuntime",
                                        "apiGroup": "trainer.kubeflow.org"}, "suspend": True}}[kind]
    if kind == "Deployment":
        spec["template"]["spec"] = {**spec["template"]["spec"], "restartPolicy": "Always"}
    api = {"Job": "batch/v1", "Deployment": "apps/v1", "JobSet": "jobset.x-k8s.io/v1alpha2",
           "TrainJob": "trainer.kubeflow.org/v1alpha1"}[kind]
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": namespace, "labels": own},
            "spec": spec}


@PARITY
@given(kind=st.sampled_from(["Pod", "Job", "Deployment", "JobSet", "TrainJob"]),
       namespace=st.sampled_from([TRAINING_NS, INFERENCE_NS]),
       label=st.sampled_from([None, TRAINING_PRIO, INFERENCE_PRIO]),
       pod_class=st.sampled_from([None, None, "system-cluster-critical", "system-node-critical"]),
       on_template=st.booleans())
def test_priority_use_verdicts_equal_the_rule_book(cluster, guarded, intruder, kind, namespace, label, pod_class,
                                                   on_template):
    """Issue 38 class 3: a workload in the training namespace at inference's priority (the inference class's label,
    or pods of a system PriorityClass) is refused for everyone; the same in the inference namespace, or at the
    training class, is not this rail's business."""
    body = _priority_workload(kind, namespace, label, pod_class, on_template)
    policy = f"kueue-cohorts.{COHORT}.priority-use"
    api = _verdict(_dry_create(intruder, body))
    python = {name for name in _python(body, None, INTRUDER, INTRUDER_GROUPS) if name == policy}
    assert (api == ("denied", policy)) == bool(python), f"{body}: apiserver {api}, rule book {python}"
    if not python:
        assert api[1] != policy, f"{body}: refused by {policy} though the rule book lets it through"


def test_the_issues_training_job_at_inference_priority_is_refused_for_everyone(cluster, guarded, intruder):
    job = _priority_workload("Job", TRAINING_NS, INFERENCE_PRIO, None, False)
    message = _refused_by(_dry_create(intruder, job), "priority-use")
    assert f"Job '{TRAINING_NS}/e2e-prio-job'" in message and "below 1000" in message
    pod = _priority_workload("Pod", TRAINING_NS, None, "system-cluster-critical", False)
    message = _refused_by(_dry_create(intruder, pod), "priority-use")
    assert "or pods of PriorityClass system-cluster-critical, system-node-critical" in message
    # the stack's own identity too: nothing the stack writes asks for it, and the harm is the same
    assert _verdict(_dry_create(cluster.api, pod)) == ("denied", f"kueue-cohorts.{COHORT}.priority-use")
    # the training class is what the training namespace runs at
    fine = _priority_workload("Job", TRAINING_NS, TRAINING_PRIO, None, False)
    assert _verdict(_dry_create(intruder, fine)) == ("allowed", None)


def test_a_collection_delete_of_kueues_manager_configuration_is_refused(cluster, guarded, intruder):
    """Issue 38 class 4: every item of a DELETECOLLECTION is judged with request.name "" (k8s.io/apiserver v0.36.3
    pkg/registry/rest/delete.go); the rail reads the deleted object's name. Dry-run: nothing is deleted either way."""
    namespace = DEV.kueue.namespace
    cluster.ensure_namespace(namespace)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kueue-manager-config",
                                                                   "namespace": namespace},
            "data": {"controller_manager_config.yaml": "apiVersion: config.kueue.x-k8s.io/v1beta2\n"}}
    existed = True
    try:
        cluster.core.read_namespaced_config_map("kueue-manager-config", namespace)
    except k8s.ApiException as exc:
        assert exc.status == 404
        existed = False
        cluster.core.create_namespaced_config_map(namespace, body)
    core = k8s.CoreV1Api(intruder)
    try:
        for selector in ("metadata.name=kueue-manager-config", None):
            message = _refused_by(lambda selector=selector: core.delete_collection_namespaced_config_map(
                namespace, dry_run="All", field_selector=selector), "kueue-manager-config-writers")
            assert "ConfigMap 'kueue-manager-config'" in message
        # a collection delete that does not reach it is not this rail's business
        assert _verdict(lambda: core.delete_collection_namespaced_config_map(
            namespace, dry_run="All", field_selector="metadata.name=e2e-nothing-here")) == ("allowed", None)
        cluster.core.read_namespaced_config_map("kueue-manager-config", namespace)
    finally:
        if not existed:
            cluster.core.delete_namespaced_config_map("kueue-manager-config", namespace)


def _reserved_trainjob(env: list[dict], patches: list | None = None, runtime: str = RUNTIME) -> dict:
    spec: dict = {"runtimeRef": {"name": runtime, "kind": "TrainingRuntime", "apiGroup": "trainer.kubeflow.org"},
                  "suspend": True, "trainer": {"env": env}}
    if patches:
        spec["runtimePatches"] = patches
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "e2e-reserved", "namespace": TRAINING_NS}, "spec": spec}


@pytest.mark.parametrize("name", ["KUEUE_COHORTS_RUN_NAME", "KUEUE_COHORTS_CHECKPOINT_ROOT", "PYTHONPATH",
                                  "PET_NODE_RANK"])
def test_a_tenants_trainjob_cannot_name_another_run_in_the_cluster(cluster, guarded, intruder, name):
    """Issue 38 class 4: the reserved trainer environment, until now enforced only in the pack, is refused by the
    cluster for a TrainJob of the stack's runtime, whoever submits it."""
    body = _reserved_trainjob([{"name": name, "value": "someone-elses-run"}])
    message = _refused_by(_dry_create(intruder, body), "trainjob-reserved-env")
    assert f"TrainJob '{TRAINING_NS}/e2e-reserved'" in message
    assert _python(body, None, INTRUDER, INTRUDER_GROUPS) == {f"kueue-cohorts.{COHORT}.trainjob-reserved-env"}


def test_the_reserved_environment_is_refused_in_runtime_patches_too_and_other_env_passes(cluster, guarded, intruder):
    patches = [{"manager": "example.com/tool", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": "node", "template": {"spec": {"template": {"spec": {"initContainers": [
            {"name": "init", "env": [{"name": "KUEUE_COHORTS_RUN_NAME", "value": "x"}]}]}}}}}]}}}}]
    body = _reserved_trainjob([], patches)
    _refused_by(_dry_create(intruder, body), "trainjob-reserved-env")
    fine = _reserved_trainjob([{"name": "HF_HUB_OFFLINE", "value": "1"}])
    assert _verdict(_dry_create(intruder, fine)) == ("allowed", None)
    assert _python(fine, None, INTRUDER, INTRUDER_GROUPS) == set()
