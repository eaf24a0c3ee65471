"""Issue 28 findings 3 and 4: namespaces we did not create, and subjects that mean everyone, are refused at their
keys with the fix (components/checks/security_rules.py and the rule book's protected-namespaces, run by the settings
check)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.security_rules import check_identities, check_preview_account, means_everyone
from kueue_cohorts.components.checks.settings_rules import check_preview_identity
from kueue_cohorts.components.checks.validation import validate
from kueue_cohorts.components.model.pack_config import pack_config
from kueue_cohorts.components.settings import PreviewIdentitySettings, StackIdentities
from kueue_cohorts.policy.rules.book import run as run_rule_book
from kueue_cohorts.policy.rules.vocabulary.system_namespaces import (
    ADD_ON_NAMESPACES,
    always_protected,
    protected_namespaces,
)
from tests.helpers import stack_raw
from tests.policy.fixtures import compliant, local_queue, stack

ID = "kueue-cohorts:admission.identities"
P = "kueue-cohorts:previewIdentity"
IDENTITY_FIX = ("name only the user (or a group only it is in) of the kubeconfig that runs pulumi up, e.g. "
                "users: [kueue-cohorts-deployer]")
ADMIN_FIX = ("set admission.identities.users to the user of the deploy job's kubeconfig, e.g. "
             "users: [kueue-cohorts-deployer] (or users: [] with groups)")
SA_FIX = ("give the preview its own ServiceAccount in a namespace of its own, e.g. name: preview, "
          "namespace: kueue-cohorts-preview")
EVERYONE = ["system:authenticated", "system:unauthenticated", "system:serviceaccounts", "system:anonymous",
            "system:masters", "system:serviceaccounts:kube-system", "system:serviceaccounts:team-a",
            "system:nodes", "system:bootstrappers:kubeadm:default-node-token", " system:masters"]


def _problems(raw: dict) -> list[tuple[str, object, str]]:
    return [(p.key, p.value, p.fix) for p in validate(raw).problems]


def _with_identities(stack: str, identities: dict) -> dict:
    raw = stack_raw(stack)
    raw.setdefault("admission", {})["identities"] = identities
    return raw


@pytest.mark.parametrize("stack", ["dev", "prod"])
@pytest.mark.parametrize("name", EVERYONE)
@pytest.mark.parametrize("field", ["users", "groups"])
def test_an_identity_that_means_everyone_is_refused_at_its_key(stack, name, field):
    other = {"users": ["kueue-cohorts-deployer"]} if field == "groups" else {"groups": ["deployers"]}
    raw = _with_identities(stack, {**other, field: ["deployers-ok", name] if field == "groups" else
                                   ["kueue-cohorts-deployer", name]})
    assert _problems(raw) == [(f"{ID}.{field}[1]", name, IDENTITY_FIX)]


@pytest.mark.parametrize("identities", [{"users": ["kueue-cohorts-deployer"]}, {"groups": ["oidc:deployers"]},
                                        {"users": ["system:serviceaccount:ci:deployer"]}])
def test_a_named_deployer_is_accepted(identities):
    if "users" not in identities:
        identities = {**identities, "users": []}
    assert _problems(_with_identities("prod", identities)) == []


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_a_kubeconfig_stack_without_identities_does_not_exempt_the_sandbox_admin(stack):
    raw = stack_raw(stack)
    del raw["admission"]["identities"]
    assert _problems(raw) == [(ID, "<absent>", ADMIN_FIX)]
    raw.pop("admission")
    assert _problems(raw) == [(ID, "<absent>", ADMIN_FIX)]
    assert _problems(_with_identities(stack, {"groups": ["deployers"]})) == [(f"{ID}.users", "<absent>", ADMIN_FIX)]
    # Written out, the name is a choice (a kubeconfig stack aimed at the sandbox itself), not an inherited default.
    assert _problems(_with_identities(stack, {"users": ["ci", "kueue-cohorts-admin"]})) == []


def test_the_sandbox_stack_keeps_its_admin_by_default():
    raw = stack_raw("dev")
    raw.pop("admission", None)
    assert _problems(raw) == []


SA = {"kind": "ServiceAccount", "name": "preview", "namespace": "kueue-cohorts-preview"}
NAME_WHY = "default"


@pytest.mark.parametrize("identity,problems", [
    ({**SA, "name": "default", "namespace": "default", "create": "Nothing"},
     [(f"{P}.name", "default", SA_FIX), (f"{P}.namespace", "default", SA_FIX)]),
    ({**SA, "name": "default", "namespace": "kube-system", "create": "Nothing"},
     [(f"{P}.name", "default", SA_FIX), (f"{P}.namespace", "kube-system", SA_FIX)]),
    ({**SA, "name": "default", "namespace": "ci", "create": "ServiceAccount"}, [(f"{P}.name", "default", SA_FIX)]),
    ({**SA, "namespace": "kube-flannel", "create": "ServiceAccount"}, [(f"{P}.namespace", "kube-flannel", SA_FIX)]),
    ({**SA, "namespace": "kube-public", "create": "Nothing"}, [(f"{P}.namespace", "kube-public", SA_FIX)]),
    ({**SA, "namespace": "default", "create": "ServiceAccount"}, [(f"{P}.namespace", "default", SA_FIX)]),
])
def test_a_preview_account_others_run_as_is_refused(identity, problems):
    raw = stack_raw("prod")
    raw["previewIdentity"] = identity
    assert _problems(raw) == problems


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.sampled_from(EVERYONE), st.from_regex(r"system:serviceaccounts:[a-z][a-z0-9-]{0,20}",
                                                          fullmatch=True)))
def test_means_everyone_covers_the_class(name):
    assert means_everyone(name)


@pytest.mark.parametrize("name", ["kueue-cohorts-deployer", "system:serviceaccount:ci:deployer", "oidc:system:masters",
                                  "System:Authenticated", "system:kube-controller-manager"])
def test_means_everyone_leaves_single_identities(name):
    assert not means_everyone(name)


# --- finding 3: namespaces we did not create ------------------------------------------------------------------------

TRAINING_NS = "kueue-cohorts:inferenceTraining.training.namespaces[0]"


def _tenant(stack: str, name: str, allowed: list | None = None) -> dict:
    raw = stack_raw(stack)
    raw["inferenceTraining"]["training"]["namespaces"] = [name]
    if allowed is not None:
        raw["allowedAddOnNamespaces"] = allowed
    return raw


def _policies(raw: dict) -> list[tuple[str, str]]:
    return [(p.key, p.policy) for p in validate(raw).problems]


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-flannel", "kube-prometheus", "kube-x",
                                  *ADD_ON_NAMESPACES])
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_namespace_we_did_not_create_is_refused_as_a_tenant(stack, name):
    """default, every kube-* name and the documented add-on namespaces are refused as tenant namespaces, by the
    rule book's protected-namespaces (the settings check, the pack and the stack's pack config agree)."""
    problems = _policies(_tenant(stack, name))
    assert (TRAINING_NS, "protected-namespaces") in problems, problems
    assert {policy for _, policy in problems} == {"protected-namespaces"}


@pytest.mark.parametrize("name", ["kubeflow", "gpu-operator", "istio-system"])
def test_an_add_on_namespace_is_a_tenant_only_when_allowed_with_a_reason(name):
    allowed = [{"name": name, "reason": "our notebooks run there and are meant to queue"}]
    assert _problems(_tenant("dev", name, allowed)) == []
    assert pack_config(validate(_tenant("dev", name, allowed)).settings)["protected-namespaces"][
        "allowedAddOnNamespaces"] == [name]
    assert _problems(_tenant("dev", "team-a", allowed)) == []


@pytest.mark.parametrize("name,fix", [
    ("default", "remove the entry and run the tenants in a namespace of their own"),
    ("kube-flannel", "remove the entry and run the tenants in a namespace of their own"),
    ("kueue-system", "remove the entry and run the tenants in a namespace of their own"),
    ("kserve", "remove the entry and run the tenants in a namespace of their own"),
    ("team-a", "remove the entry (the namespace may be a tenant as it is); protected add-ons: "
               + ", ".join(ADD_ON_NAMESPACES)),
])
def test_only_add_on_namespaces_can_be_allowed(name, fix):
    raw = _tenant("dev", "team-a", [{"name": name, "reason": "because"}])
    assert _problems(raw) == [("kueue-cohorts:allowedAddOnNamespaces[0].name", name, fix)]


def test_an_allowance_needs_a_reason():
    raw = _tenant("dev", "kubeflow", [{"name": "kubeflow", "reason": "  "}])
    assert _problems(raw) == [("kueue-cohorts:allowedAddOnNamespaces[0].reason", "  ",
                               "write why its pods may come under Kueue")]
    raw = _tenant("dev", "kubeflow", [{"name": "kubeflow"}])
    assert [p[0] for p in _problems(raw)] == ["kueue-cohorts:allowedAddOnNamespaces[0].reason"]


@given(st.from_regex(r"kube-[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True))
@hsettings(max_examples=30, deadline=None)
def test_every_kube_prefixed_name_is_always_protected(name):
    assert always_protected(name)
    assert name in protected_namespaces(allowed_add_ons=[name], mentioned=[name, "team-a"])
    assert "team-a" not in protected_namespaces(mentioned=["team-a"])


def test_the_pack_refuses_a_kube_namespace_its_stack_selects_by_name():
    """The pack (the rule book on the objects, without the settings layer): a ClusterQueue pinning kube-flannel
    by name, and a LocalQueue in it."""
    m = compliant()
    cq = next(k for k, v in m.items() if v.get("kind") == "ClusterQueue")
    m[cq]["spec"]["namespaceSelector"] = {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["kube-flannel"]}]}
    m["lq-flannel"] = local_queue("lq", "kube-flannel", m[cq]["metadata"]["name"])
    found = [(r.name, v.field) for r, v in run_rule_book(stack(m), {}) if r.name == "protected-namespaces"]
    assert ("protected-namespaces", "spec.namespaceSelector") in found
    assert ("protected-namespaces", "metadata.namespace") in found


# --- issue 38 class 5: single identities that are not the stack's own -----------------------------------------------

OWN_FIX = ("name only the user of the kubeconfig that runs pulumi up, or a ServiceAccount of a namespace of its own "
           "that only the deploy uses, e.g. users: [kueue-cohorts-deployer]")
NOT_OWN = ["system:serviceaccount:team-a:default", "system:serviceaccount:inference-prod:default",
           "system:serviceaccount:kube-system:replicaset-controller", "system:serviceaccount:kube-flannel:flannel",
           "system:serviceaccount:default:deployer", "system:serviceaccount:kueue-system:kueue-controller-manager",
           "system:serviceaccount:jobset-system:jobset-controller-manager",
           "system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager",
           "system:kube-controller-manager", "system:kube-scheduler", "system:kube-proxy", "system:node:gpu-1",
           "system:apiserver", " system:kube-controller-manager"]


@pytest.mark.parametrize("stack", ["dev", "prod"])
@pytest.mark.parametrize("name", NOT_OWN)
def test_a_user_that_is_a_controller_node_or_shared_account_is_refused_at_its_key(stack, name):
    """`admission.identities.users` takes one rule with the preview identity: a `default` account, an account of
    default / kube-* / Kueue's / a controller's namespace, or another `system:` name is not the stack's."""
    raw = _with_identities(stack, {"users": ["kueue-cohorts-deployer", name]})
    assert _problems(raw) == [(f"{ID}.users[1]", name, OWN_FIX)]


@pytest.mark.parametrize("name", ["kueue-cohorts-deployer", "system:serviceaccount:kueue-cohorts-deploy:deployer",
                                  "ci@example.com"])
def test_a_user_of_the_stacks_own_is_accepted(name):
    assert _problems(_with_identities("prod", {"users": [name]})) == []


PROD = validate(stack_raw("prod")).settings


@hsettings(max_examples=300, deadline=None)
@given(namespace=st.one_of(st.sampled_from(["default", "kube-system", "kube-x", "kueue-system", "jobset-system",
                                            "kserve", "team-a", "deploy", "kubeflow-system"]),
                           st.from_regex(r"[a-z]([a-z0-9-]{0,9}[a-z0-9])?", fullmatch=True)),
       name=st.one_of(st.just("default"), st.from_regex(r"[a-z]([a-z0-9-]{0,9}[a-z0-9])?", fullmatch=True)))
def test_one_rule_for_the_preview_account_and_the_identities(namespace, name):
    """The same (namespace, name) is refused as the preview identity's ServiceAccount exactly when its user name is
    refused in admission.identities.users, and that is when it is a default account or its namespace is always
    protected (default, kube-*, Kueue's, the controllers')."""
    identity = PreviewIdentitySettings(kind="ServiceAccount", name=name, namespace=namespace, create="Nothing")
    user = f"system:serviceaccount:{namespace}:{name}"
    ids = StackIdentities(users=[user])
    settings_ = PROD.model_copy(update={"preview_identity": identity,
                                        "admission": PROD.admission.model_copy(update={"identities": ids})})
    # Kueue's own namespace is refused once, by check_preview_identity (check_preview_account leaves it to that).
    preview = check_preview_account(settings_) + [p for p in check_preview_identity(settings_)
                                                  if p.value == settings_.kueue.namespace]
    identities = [p for p in check_identities(settings_) if p.key.endswith("users[0]")]
    expected = name == "default" or always_protected(namespace)
    assert bool(preview) == bool(identities) == expected, (preview, identities)
