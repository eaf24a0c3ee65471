"""Issue 28 finding 4: subjects that mean everyone are refused at their keys with the fix
(components/security_rules.py, run by the settings check)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from components.security_rules import means_everyone
from components.validation import validate
from tests.helpers import stack_raw

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
    assert _problems(_with_identities(stack, {"users": ["ci", "kueue-cohorts-admin"]})) == \
        [(f"{ID}.users[1]", "kueue-cohorts-admin", ADMIN_FIX)]


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
