"""Issue 39 item 2: the first `up` after adding the deploy identity to admission.identities raced the guardrails'
update (the namespace write was judged by the old policy). `deploy up` finds, in its preview, the guardrails whose
new version lets the identity through and the old one does not, and updates them first (deploy/guardrails_first.py);
here the pure parts, on the policies the stack really renders."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Optional

from hypothesis import example, given, settings
from hypothesis import strategies as st
from pulumi.automation import EngineEvent

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.admission import admission_manifests
from kueue_cohorts.components.settings import raw_from_stack_file
from kueue_cohorts.deploy import guardrails_first
from kueue_cohorts.deploy.live_preflight import IDENTITY_GATED, Identity

REPO = Path(__file__).resolve().parents[3]
DEV = raw_from_stack_file(REPO / "stacks" / "Pulumi.dev.yaml")
STACK = "urn:pulumi:dev::kueue-cohorts::"


def policies(users: list[str], groups: list[str]) -> dict[str, dict[str, Any]]:
    """The dev stack's ValidatingAdmissionPolicies (by guardrail policy name) with these admission.identities."""
    raw = copy.deepcopy(DEV)
    raw["admission"] = {"identities": {"users": users, "groups": groups}}
    return {rail.policy: policy for rail, policy, _ in admission_manifests(load_settings(raw))}


def step(op: str, old: Optional[dict], new: Optional[dict], type_: str = guardrails_first.VAP_TYPE) -> EngineEvent:
    name = (old or new or {})["metadata"]["name"]
    urn = f"{STACK}{type_}::{name}"

    def state(o: Optional[dict]) -> Optional[dict]:
        return None if o is None else {"type": type_, "urn": urn, "id": name, "custom": True, "inputs": o,
                                       "outputs": o}

    metadata = {"op": op, "urn": urn, "type": type_, "provider": "", "old": state(old), "new": state(new)}
    return EngineEvent.from_json({"sequence": 1, "timestamp": 0, "resourcePreEvent": {"metadata": metadata}})


NAMES = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=20).filter(
    lambda s: s.strip() == s and s not in ("kueue-cohorts-admin",) and not s.startswith("system:"))


@example(".")
@settings(max_examples=40, deadline=None)
@given(NAMES)
def test_adding_the_user_makes_exactly_the_identity_gated_guardrails_go_first(user):
    """Whatever the name (quotes, backslashes, unicode: the guardrails write it as a CEL string literal), the
    policies that let only admission.identities through, and only they, are updated first."""
    before, after = policies(["kueue-cohorts-admin"], []), policies(["kueue-cohorts-admin", user], [])
    who = Identity(user, ("system:authenticated",))
    events = [step("update", before[name], after[name]) for name in before]
    first = guardrails_first.gated_updates(events, who)
    gated = {name for name in before if name in IDENTITY_GATED}
    assert first == [f"{STACK}{guardrails_first.VAP_TYPE}::{before[name]['metadata']['name']}"
                     for name in before if name in gated]
    assert gated  # the dev stack has them
    assert guardrails_first.gated_updates(events, Identity("someone-else")) == []


def test_a_group_added_counts_and_nothing_else_goes_first():
    before, after = policies(["kueue-cohorts-admin"], []), policies(["kueue-cohorts-admin"], ["platform"])
    who = Identity("ci-bot", ("platform", "system:authenticated"))
    tenant = before["tenant-label"]
    assert guardrails_first.gated_updates([step("update", tenant, after["tenant-label"])], who) == \
        [f"{STACK}{guardrails_first.VAP_TYPE}::{tenant['metadata']['name']}"]
    unchanged = [step("same", tenant, tenant), step("create", None, after["tenant-label"]),  # a first rollout
                 step("update", after["tenant-label"], after["tenant-label"]),  # already in force
                 step("update", tenant, after["tenant-label"], type_="kubernetes:core/v1:Namespace")]
    assert guardrails_first.gated_updates(unchanged, who) == []


def test_settle_waits_until_admitted_and_is_bounded():
    now = [0.0]
    answers = iter(["HTTP 403: denied", "HTTP 403: denied", None])
    assert guardrails_first.settle(lambda: next(answers), timeout_seconds=5, interval=1, clock=lambda: now[0],
                                   sleep=lambda s: now.__setitem__(0, now[0] + s)) is None
    assert now[0] == 2
    now[0] = 0.0
    assert guardrails_first.settle(lambda: "HTTP 403: denied", timeout_seconds=3, interval=1, clock=lambda: now[0],
                                   sleep=lambda s: now.__setitem__(0, now[0] + s)) == "HTTP 403: denied"
    assert now[0] == 3


@settings(max_examples=25, deadline=None)
@given(NAMES)
def test_the_live_read_finds_the_same_guardrails_before_any_preview(user):
    """Issue 40 item 7: `up` decides its passes before any engine run, so it reads the gated guardrails from the live
    preflight's list of policies (`gated_live`): the very guardrails `gated_updates` finds in a preview's steps
    (an `up` that finds one previews first, deploy/cli.py `up_passes`); none on a first rollout, none already in
    force, none when the identity could not be read."""
    before, after = policies(["kueue-cohorts-admin"], []), policies(["kueue-cohorts-admin", user], [])
    who = Identity(user, ("system:authenticated",))
    from_preview = guardrails_first.gated_updates([step("update", before[n], after[n]) for n in before], who)
    live = guardrails_first.gated_live(after.values(), before.values(), who)
    assert [f"{STACK}{guardrails_first.VAP_TYPE}::{name}" for name in live] == from_preview
    assert live  # the dev stack has identity-gated guardrails
    assert guardrails_first.gated_live(after.values(), [], who) == []  # a first rollout: no old policy to race
    assert guardrails_first.gated_live(after.values(), after.values(), who) == []  # already in force
    assert guardrails_first.gated_live(after.values(), before.values(), None) == []
