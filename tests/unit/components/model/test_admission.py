"""The in-cluster guardrails as generated manifests: which policies each stack gets, the CEL constants taken from the
stack config, the messages taken from the rule book, the settings that switch Deny to Warn + Audit, and the Python
side of each guardrail (the apiserver side is tests/e2e/test_10_admission.py)."""
from __future__ import annotations

import copy
import datetime as dt
import json
import re

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from kueue_cohorts.components.model.admission import (
    admission_manifests,
    layout_scopes,
    render_admission,
    stack_guardrails,
)
from kueue_cohorts.components.settings import SANDBOX_ADMIN, parse_settings
from kueue_cohorts.components.settings.errors import SettingsError
from kueue_cohorts.policy.rules.book import admission
from kueue_cohorts.policy.rules.book.admission import Identities, LayoutScope, Request, kube_object
from kueue_cohorts.policy.rules.inference_borrowing_limit_zero import check_inference_borrowing_limit_zero
from kueue_cohorts.policy.rules.inference_reclaim_any import check_inference_reclaim_any
from kueue_cohorts.sandbox import certs
from tests.helpers import run_main, stack_raw

DEV_RULES = ["inference-borrowing-limit-zero", "inference-reclaim-any", "namespace-selector",
             "workload-priority-class", "tenant-label", "inference-rollout-fits-nominal", "reclaim-within-budget",
             "cohort-membership", "priority-ceiling", "kueue-manager-config-writers", "priority-use",
             "trainjob-reserved-env"]
WRITE_AND_DELETE = ("kueue-manager-config-writers", "multikueue-writers")


def _dev(**admission_settings):
    raw = stack_raw("dev")
    if admission_settings:
        raw["admission"] = admission_settings
    return parse_settings(raw)


def _rails(settings):
    return {rail.policy: rail for rail in stack_guardrails(settings)}


def test_dev_stack_gets_one_policy_and_one_binding_per_rule_named_after_its_cohort():
    triples = admission_manifests(_dev())
    assert [rail.policy for rail, _, _ in triples] == DEV_RULES
    for rail, policy, binding in triples:
        name = f"kueue-cohorts.c12-shared.{rail.policy}"
        assert policy["apiVersion"] == binding["apiVersion"] == "admissionregistration.k8s.io/v1"
        assert (policy["kind"], binding["kind"]) == ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
        assert policy["metadata"]["name"] == binding["metadata"]["name"] == binding["spec"]["policyName"] == name
        assert binding["spec"]["validationActions"] == ["Deny"]
        assert policy["spec"]["failurePolicy"] == "Fail"
        operations = policy["spec"]["matchConstraints"]["resourceRules"][0]["operations"]
        assert operations == (["CREATE", "UPDATE", "DELETE"] if rail.policy in WRITE_AND_DELETE
                              else ["CREATE", "UPDATE"])
        assert policy["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "kueue-cohorts",
                                                "kueue-cohorts/rule": rail.policy, "kueue-cohorts/cohort": "c12-shared"}


def test_warn_and_audit_switch_every_binding_for_a_first_rollout():
    manifests = admission_manifests(_dev(validationActions=["Warn", "Audit"]))
    assert len(manifests) >= 5  # every guardrail of the dev stack
    for _, _, binding in manifests:
        assert binding["spec"]["validationActions"] == ["Warn", "Audit"]


@pytest.mark.parametrize("actions", [["Deny", "Warn"], [], ["Audit", "Audit"], ["deny"]])
def test_bindings_the_apiserver_would_refuse_are_refused_at_the_config_key(actions):
    with pytest.raises(SettingsError) as err:
        _dev(validationActions=actions)
    assert [p.key for p in err.value.problems][0].startswith("kueue-cohorts:admission.validationActions")
    assert "Fix:" in str(err.value)


def test_a_stack_that_nobody_may_label_is_refused():
    with pytest.raises(SettingsError) as err:
        _dev(identities={"users": [], "groups": []})
    [problem] = err.value.problems
    assert problem.key == "kueue-cohorts:admission.identities"
    assert "user or group" in problem.fix


def test_the_default_identity_is_the_sandbox_admin_certificate(tmp_path):
    issued = certs.ensure(tmp_path, now=dt.datetime.now(dt.UTC))
    cert = x509.load_pem_x509_certificate(issued.admin_crt.read_bytes())
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == SANDBOX_ADMIN
    assert _dev().admission.identities.users == [SANDBOX_ADMIN]
    tenant = _rails(_dev())["tenant-label"].policy_manifest()
    assert f'request.userInfo.username in ["{SANDBOX_ADMIN}"]' in tenant["spec"]["matchConditions"][0]["expression"]


def test_identities_and_label_key_from_the_settings_reach_the_cel():
    raw = stack_raw("dev")
    raw["inferenceTraining"]["namespaceLabel"] = "example.com/tenant"
    raw["admission"] = {"identities": {"users": ["ci-deployer"], "groups": ["platform-admins"]}}
    spec = _rails(parse_settings(raw))["tenant-label"].policy_manifest()["spec"]
    condition = spec["matchConditions"][0]["expression"]
    assert '["ci-deployer"]' in condition and '["platform-admins"]' in condition
    assert all('"example.com/tenant"' in v["expression"] for v in spec["variables"])


@hsettings(max_examples=25, deadline=None)
@given(training=st.integers(-(2**31), 2**31 - 2), gap=st.integers(1, 2**31))
def test_priority_constants_follow_the_declared_values(training, gap):
    inference = min(training + gap, 2**31 - 1)
    raw = stack_raw("dev")
    raw["inferenceTraining"]["inference"]["priorityClass"]["value"] = inference
    raw["inferenceTraining"]["training"]["priorityClass"]["value"] = training
    spec = _rails(parse_settings(raw))["workload-priority-class"].policy_manifest()["spec"]
    assert [v["expression"] for v in spec["validations"]] == [
        f"variables.unchanged || (!variables.inference || object.value > {training})",
        f"variables.unchanged || (!variables.training || variables.inference || object.value < {inference})"]


def test_inference_queue_names_come_from_the_stack_and_its_role_label():
    raw = stack_raw("dev")
    raw["inferenceTraining"]["inference"]["clusterQueue"] = "online-cq"
    rails = _rails(parse_settings(raw))
    for policy in ("inference-borrowing-limit-zero", "inference-reclaim-any"):
        condition = rails[policy].policy_manifest()["spec"]["matchConditions"][0]["expression"]
        assert 'object.metadata.name in ["online-cq"]' in condition
        assert '"kueue-cohorts/role"' in condition and '== "inference"' in condition
    selector = rails["namespace-selector"].policy_manifest()["spec"]["matchConditions"][0]["expression"]
    assert selector == 'object.metadata.name in ["c12-training-cq", "online-cq"]'


def _cq(name="c12-inference-cq", **spec):
    return kube_object({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                        "metadata": {"name": name}, "spec": {"cohortName": "c12-shared", **spec}})


def test_cluster_queue_messages_are_the_rule_books_words():
    rails = _rails(_dev())
    broken = _cq(resourceGroups=[{"coveredResources": ["cpu"], "flavors": [
        {"name": "x", "resources": [{"name": "cpu", "nominalQuota": "1", "borrowingLimit": "2"}]}]}],
        preemption={"reclaimWithinCohort": "LowerPriority"})
    for policy, check in (("inference-borrowing-limit-zero", check_inference_borrowing_limit_zero),
                          ("inference-reclaim-any", check_inference_reclaim_any)):
        [found] = check(broken, ["c12-inference-cq"])
        [validation] = rails[policy].policy_manifest()["spec"]["validations"]
        for text in (validation["message"], json.loads(validation["messageExpression"].split(" + ")[-2])):
            assert f"kueue-cohorts rule {policy}" in text
            assert found.rule in text and f"fix: {found.fix}" in text


def test_shared_pool_layouts_get_no_inference_rails_and_each_layout_its_own_names():
    rails = stack_guardrails(parse_settings(stack_raw("staging")))
    names = [rail.name for rail in rails]
    assert len(names) == len(set(names))
    by_cohort: dict[str, list[str]] = {}
    for rail in rails:
        by_cohort.setdefault(rail.cohort, []).append(rail.policy)
    scopes = {s.cohort: s for s in layout_scopes(parse_settings(stack_raw("staging")))}
    for cohort, policies in by_cohort.items():
        expected = DEV_RULES if scopes[cohort].inference_cluster_queues else \
            ["namespace-selector", "tenant-label", "cohort-membership"]
        if scopes[cohort].kueue_namespace is None:
            expected = [p for p in expected if p != "kueue-manager-config-writers"]
        if not scopes[cohort].reserved_runtimes:
            expected = [p for p in expected if p != "trainjob-reserved-env"]
        assert policies == expected
    assert sum(rail.policy == "kueue-manager-config-writers" for rail in rails) == 1


def test_render_stack_carries_the_guardrails_with_their_config_keys():
    rendered = render_admission(_dev())
    assert len(rendered) == 2 * len(DEV_RULES)
    bindings = [r for r in rendered if r.kind == "ValidatingAdmissionPolicyBinding"]
    assert all(r.fields["spec.validationActions"] == ("admission", "validationActions") for r in bindings)
    tenant = next(r for r in rendered if r.name.endswith("tenant-label") and r.kind == "ValidatingAdmissionPolicy")
    assert tenant.fields["spec.matchConditions"] == ("admission", "identities")


def test_the_program_registers_the_guardrails_parented_and_before_the_cohorts():
    config = stack_raw("dev")
    config["cluster"] = {"mode": "render", "renderDir": "build/rendered/unit"}
    mocks = run_main({f"kueue-cohorts:{k}": json.dumps(v) for k, v in config.items()})
    policies = [r for r in mocks.registered if r.typ == "kubernetes:admissionregistration.k8s.io/v1:"
                                                        "ValidatingAdmissionPolicy"]
    bindings = [r for r in mocks.registered if r.typ.endswith(":ValidatingAdmissionPolicyBinding")]
    assert sorted(r.inputs["metadata"]["name"] for r in policies) == sorted(
        f"kueue-cohorts.c12-shared.{p}" for p in DEV_RULES)
    assert len(bindings) == len(policies)
    assert all(r.name.startswith("admission-vap") for r in policies + bindings)
    order = [r.name for r in mocks.registered]
    assert order.index("admission") < order.index("resource-flavor") < order.index("inference-training")


# --- the Python side of each guardrail (what the apiserver must agree with) -----------------------------------------

SCOPE = LayoutScope("c12-shared", ("c12-inference-cq", "c12-training-cq"), ("c12-inference-cq",),
                    {"c12-inference-prio": 1000}, {"c12-training-prio": 10})
ADMIN = Identities(users=("kueue-cohorts-admin",), groups=("platform",))
LABEL = "kueue.x-k8s.io/queue"


def _ns(labels):
    return kube_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-x", "labels": labels}})


label_values = st.one_of(st.none(), st.sampled_from(["c12-inference-cq", "c12-training-cq", "", "other"]))


@hsettings(max_examples=80, deadline=None)
@given(before=label_values, after=label_values, create=st.booleans(),
       user=st.sampled_from(["kueue-cohorts-admin", "alice"]), groups=st.sampled_from([(), ("platform",), ("dev",)]))
def test_tenant_label_only_changes_under_a_stack_identity(before, after, create, user, groups):
    old = None if create else _ns({} if before is None else {LABEL: before, "x": "y"})
    new = _ns({} if after is None else {LABEL: after})
    found = admission.check_tenant_label(Request(new, old, user, groups), LABEL, ADMIN)
    ours = user == "kueue-cohorts-admin" or "platform" in groups
    changed = (None if create else before) != after
    assert bool(found) == (changed and not ours)
    if found:
        assert found[0].field == 'metadata.labels["kueue.x-k8s.io/queue"]' and found[0].policy == "tenant-label"


@hsettings(max_examples=60, deadline=None)
@given(name=st.sampled_from(["c12-inference-prio", "c12-training-prio", "extra"]),
       role=st.sampled_from([None, "inference", "training", "tenant"]), value=st.integers(-5, 2000))
def test_priority_ranking_judges_the_written_class_against_the_declared_other_side(name, role, value):
    wpc = kube_object({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                       "metadata": {"name": name, "labels": {"kueue-cohorts/role": role} if role else {}},
                       "value": value})
    found = _rails_of(SCOPE)["workload-priority-class"].judge(Request(wpc))
    side = {"c12-inference-prio": "inference", "c12-training-prio": "training"}.get(name, role)
    denied = (side == "inference" and value <= 10) or (side == "training" and value >= 1000)
    assert bool(found) == denied


def _rails_of(scope):
    return {rail.policy: rail for rail in admission.guardrails(scope, ADMIN)}


def test_validation_actions_as_the_apiserver_checks_them():
    assert admission.validate_actions(["Warn", "Audit"]) == ("Warn", "Audit")
    for bad in ([], ["Deny", "Warn"], ["Deny", "Deny"], ["Block"]):
        with pytest.raises(ValueError):
            admission.validate_actions(bad)


@pytest.mark.parametrize("stack,actions", [("staging", ["Warn", "Audit"]), ("prod", ["Deny"])])
def test_prod_denies_and_staging_stays_at_the_first_rollout_step(stack, actions):
    """Issue 26 item 7: the shipped prod stack refuses; Warn + Audit stays the documented first rollout step, which
    staging shows."""
    settings = parse_settings(stack_raw(stack))
    assert [a.value for a in settings.admission.validation_actions] == actions
    assert SANDBOX_ADMIN not in settings.admission.identities.users
    manifests = admission_manifests(settings)
    assert manifests
    for _, _, binding in manifests:
        assert binding["spec"]["validationActions"] == actions


def test_an_update_that_leaves_the_judged_fields_alone_passes_on_both_sides():
    """Ratcheting: a ClusterQueue that already breaks a rule (written while the binding was Warn) still takes
    metadata updates (the engine's managedFields patch before its repair); a spec change that keeps it broken does
    not."""
    rails = _rails_of(SCOPE)
    broken = _cq(resourceGroups=[{"coveredResources": ["cpu"], "flavors": [
        {"name": "x", "resources": [{"name": "cpu", "nominalQuota": "1", "borrowingLimit": "1"}]}]}],
        preemption={"reclaimWithinCohort": "Any"}, namespaceSelector={"matchLabels": {LABEL: "t"}})
    relabelled = kube_object({**broken.props, "metadata": {"name": "c12-inference-cq", "annotations": {"a": "b"}}})
    worse = copy.deepcopy(dict(broken.props))
    worse["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = "2"
    rail = rails["inference-borrowing-limit-zero"]
    assert rail.judge(Request(broken)) and rail.judge(Request(kube_object(worse), broken))
    assert rail.judge(Request(relabelled, broken)) == []
    spec = rail.policy_manifest()["spec"]
    assert spec["variables"][0]["name"] == "unchanged"
    assert all(v["expression"].startswith("variables.unchanged || (") for v in spec["validations"])
    assert "oldObject.spec == object.spec" in spec["variables"][0]["expression"]
    assert rails["tenant-label"].ratchet == ()


# --- issue 26 item 7: who may grow the cohort tree, outrank inference, change Kueue's Configuration ------------------

INTRUDERS = st.sampled_from([("alice", ()), ("alice", ("dev",)), ("system:serviceaccount:team:ci", ("ci",))])
WRITERS = st.one_of(INTRUDERS, st.sampled_from([("kueue-cohorts-admin", ()), ("bob", ("platform",))]))
COHORT_NAMES = st.sampled_from([None, "c12-shared", "elsewhere", ""])


def _kueue(kind, name, **spec):
    return kube_object({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": {"name": name},
                        "spec": {k: v for k, v in spec.items() if v is not None}})


@hsettings(max_examples=120, deadline=None)
@given(kind=st.sampled_from(["ClusterQueue", "Cohort"]), name=st.sampled_from(["hand-made", "c12-shared"]),
       before=COHORT_NAMES, after=COHORT_NAMES, create=st.booleans(), quota=st.sampled_from(["1", "2"]),
       who=WRITERS)
def test_only_the_stack_grows_or_changes_the_guarded_cohort_tree(kind, name, before, after, create, quota, who):
    """A ClusterQueue (spec.cohortName) or a Cohort (its name, spec.parentName) in the layout's tree, written by
    anyone else, is refused when created, moved in or out, or changed in spec; a metadata-only update passes."""
    key = "cohortName" if kind == "ClusterQueue" else "parentName"
    quotas = [{"name": "f", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": quota}]}]
    old = None if create else _kueue(kind, name, **{key: before}, resourceGroups=[{"flavors": quotas}])
    new = _kueue(kind, name, **{key: after}, resourceGroups=[{"flavors": quotas}])
    rail = _rails_of(SCOPE)["cohort-membership"]
    found = rail.judge(Request(new, old, *who))
    ours = ADMIN.includes(*who)
    member = (kind == "Cohort" and name == "c12-shared") or after == "c12-shared"
    was = old is not None and ((kind == "Cohort" and name == "c12-shared") or before == "c12-shared")
    unchanged = old is not None and before == after
    assert bool(found) == (not ours and (member or was) and not unchanged)
    if found:
        assert found[0].policy == "cohort-membership"
        assert found[0].field in ("spec.cohortName", "spec.parentName", "metadata.name")
        assert "declare the queue in the stack config" in found[0].fix


def test_the_issues_hand_made_queue_in_the_inference_cohort_is_refused_for_an_intruder_only():
    """Issue 26 item 7 as tried on the sandbox: no labels of ours, its own GPU nominalQuota, cohortName = the
    inference cohort."""
    queue = _kueue("ClusterQueue", "sneaky-cq", cohortName="c12-shared", namespaceSelector={}, resourceGroups=[
        {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "gpu", "resources": [
            {"name": "nvidia.com/gpu", "nominalQuota": "1"}]}]}])
    rail = _rails_of(SCOPE)["cohort-membership"]
    [found] = rail.judge(Request(queue, None, "alice", ("system:authenticated",)))
    assert (found.field, found.value) == ("spec.cohortName", "c12-shared")
    assert rail.judge(Request(queue, None, "kueue-cohorts-admin")) == []
    spec = rail.policy_manifest()["spec"]
    assert [r["resources"] for r in spec["matchConstraints"]["resourceRules"]] == [["clusterqueues"], ["cohorts"]]
    assert '["c12-shared"]' in spec["variables"][1]["expression"]
    assert spec["variables"][0]["name"] == "unchanged"  # ratchet: Kueue's finalizer update keeps spec
    # the name is quoted in the message (measured on kube-apiserver 1.36.3: "ClusterQueue 'sneaky-cq' breaks ...")
    assert '+ "\' breaks the kueue-cohorts rule cohort-membership at " + ' in \
        spec["validations"][0]["messageExpression"]


@hsettings(max_examples=80, deadline=None)
@given(name=st.sampled_from(["c12-inference-prio", "c12-training-prio", "hand-made"]),
       value=st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([999, 1000, 1001, 1_000_000])),
       before=st.one_of(st.none(), st.sampled_from([5, 1000, 1_000_000])), who=WRITERS)
def test_only_the_stack_writes_a_priority_class_at_or_above_inference(name, value, before, who):
    wpc = _priority(name, value)
    old = None if before is None else _priority(name, before)
    found = _rails_of(SCOPE)["priority-ceiling"].judge(Request(wpc, old, *who))
    unchanged = before == value
    assert bool(found) == (name != "c12-inference-prio" and value >= 1000 and not ADMIN.includes(*who)
                           and not unchanged)
    if found:
        assert (found[0].field, found[0].value) == ("value", value) and "below 1000" in found[0].fix


def _priority(name, value, labels=None):
    return kube_object({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                        "metadata": {"name": name, "labels": labels or {}}, "value": value})


def test_a_priority_class_labelled_inference_by_an_intruder_is_still_refused():
    """Labels prove nothing (the writer writes them): a class of 1,000,000 labelled inference passes the ranking
    rail and is refused by the ceiling."""
    rails = _rails_of(SCOPE)
    wpc = _priority("vip", 1_000_000, {"kueue-cohorts/role": "inference"})
    assert rails["workload-priority-class"].judge(Request(wpc, None, "alice")) == []
    assert rails["priority-ceiling"].judge(Request(wpc, None, "alice"))
    spec = rails["priority-ceiling"].policy_manifest()["spec"]
    assert [v["expression"] for v in spec["validations"]] == ["variables.unchanged || (object.value < 1000)"]


def _config_map(namespace="kueue-system", name="kueue-manager-config", data="a"):
    return kube_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
                        "data": {"controller_manager_config.yaml": data}})


@hsettings(max_examples=80, deadline=None)
@given(namespace=st.sampled_from(["kueue-system", "team-a"]), name=st.sampled_from(["kueue-manager-config", "x"]),
       operation=st.sampled_from(["CREATE", "UPDATE", "DELETE"]), same=st.booleans(), who=WRITERS)
def test_only_the_stack_changes_kueues_manager_configuration(namespace, name, operation, same, who):
    scope = LayoutScope(**{**SCOPE.__dict__, "kueue_namespace": "kueue-system"})
    new = _config_map(namespace, name, "a")
    old = None if operation == "CREATE" else _config_map(namespace, name, "a" if same else "b")
    found = _rails_of(scope)["kueue-manager-config-writers"].judge(Request(new, old, *who, operation=operation))
    ours = ADMIN.includes(*who)
    judged = (namespace, name) == ("kueue-system", "kueue-manager-config")
    assert bool(found) == (judged and not ours and not (operation == "UPDATE" and same))


def test_manager_configuration_rail_matches_delete_and_only_the_first_layout_carries_it():
    scope = LayoutScope(**{**SCOPE.__dict__, "kueue_namespace": "kueue"})
    spec = _rails_of(scope)["kueue-manager-config-writers"].policy_manifest()["spec"]
    assert spec["matchConstraints"]["resourceRules"][0]["operations"] == ["CREATE", "UPDATE", "DELETE"]
    # the object's name: request.name is empty for each item of a DELETECOLLECTION (issue 38 class 4)
    assert spec["matchConditions"][0]["expression"] == \
        'request.namespace == "kueue" && (object != null ? object.metadata.name : oldObject.metadata.name) == ' \
        '"kueue-manager-config"'
    assert spec["validations"][0]["expression"].startswith("request.operation == 'UPDATE' && ")
    assert not re.search(r"request\.name\b", json.dumps(spec))
    assert "oldObject.metadata.name" in spec["validations"][0]["messageExpression"]  # object is null on DELETE
    assert "kueue-manager-config-writers" not in _rails_of(SCOPE)
    scopes = layout_scopes(parse_settings(stack_raw("mixed")))
    assert [s.kueue_namespace for s in scopes][1:] == [None] * (len(scopes) - 1) and scopes[0].kueue_namespace


def test_tenant_label_rail_matches_every_path_that_writes_namespace_labels():
    """Issue 28 finding 5: the status and finalize subresources keep metadata changes."""
    rules = _rails_of(SCOPE)["tenant-label"].policy_manifest()["spec"]["matchConstraints"]["resourceRules"]
    assert rules == [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                      "resources": [plural]} for plural in ("namespaces", "namespaces/status", "namespaces/finalize")]


def _trainer(kind, grace=None, prestop=None, namespace="c12-training", job="node"):
    pod = {"containers": [{"name": "node", **({"lifecycle": {"preStop": prestop}} if prestop else {})}]}
    if grace is not None:
        pod["terminationGracePeriodSeconds"] = grace
    jobs = [{"name": job, "template": {"spec": {"template": {"spec": pod}}}}]
    spec = ({"template": {"spec": {"replicatedJobs": jobs}}} if kind == "TrainingRuntime" else
            {"runtimeRef": {"name": "c12-checkpoint-runtime", "kind": "TrainingRuntime"},
             "runtimePatches": [{"manager": "x", "trainingRuntimeSpec": {"template": {"spec": {
                 "replicatedJobs": jobs}}}}]})
    return kube_object({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind,
                        "metadata": {"name": "t", "namespace": namespace}, "spec": spec})


@pytest.mark.parametrize("kind", ["TrainingRuntime", "TrainJob"])
@pytest.mark.parametrize("grace,prestop,denied", [
    (None, None, False), (60, None, False), (61, None, True), (86400, None, True),
    (58, {"sleep": {"seconds": 58}}, False), (58, {"sleep": {"seconds": 59}}, True),
    (58, {"exec": {"command": ["sleep", "1"]}}, False), (59, {"httpGet": {"port": 80}}, True)])
def test_the_reclaim_time_rail_refuses_one_object_that_holds_a_node_past_the_budget(kind, grace, prestop, denied):
    """Issue 37 class 4 in the cluster: a trainer pod written in a training namespace by anyone may keep its node at
    most the reclaim budget (dev: 60 s): max(grace, 2), a preStop sleep N: N + 2, another hook: grace + 2."""
    rail = _rails(_dev())["reclaim-within-budget"]
    found = rail.judge(Request(_trainer(kind, grace, prestop)))
    if kind == "TrainJob" and grace is None and prestop is None:
        denied = False  # a patch that changes neither leaves the runtime's own grace period
    assert bool(found) == denied, [v.message for v in found]
    assert rail.judge(Request(_trainer(kind, grace, prestop, namespace="elsewhere"))) == []
    policy = rail.policy_manifest()
    assert policy["spec"]["matchConditions"] == [{"name": "training-namespace",
                                                  "expression": 'object.metadata.namespace in ["c12-training"]'}]
    assert "<= 60" in policy["spec"]["validations"][0]["expression"]


def test_the_reclaim_time_rail_follows_the_stacks_budget():
    raw = stack_raw("dev")
    raw["inferenceTraining"]["inference"]["reclaimBudgetSeconds"] = 4000
    rail = _rails(parse_settings(raw))["reclaim-within-budget"]
    assert rail.judge(Request(_trainer("TrainingRuntime", 3600))) == []
    [finding] = rail.judge(Request(_trainer("TrainingRuntime", 4001)))
    assert finding.fix.startswith("set terminationGracePeriodSeconds to at most 4000")
    assert "reclaim budget of 4000 s" in rail.policy_manifest()["spec"]["validations"][0]["message"]
