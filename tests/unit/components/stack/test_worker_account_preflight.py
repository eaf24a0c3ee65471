"""Issue 38 class 2: the worker ServiceAccount the stack creates on each MultiKueue worker is absent or the stack's
(its mark, or the managed-by label of an earlier version): the preflight refuses taking over anyone else's account,
at its config key, before any change. The read itself is exercised against a real kube-apiserver by the sandbox
e2e (test_26_multikueue, whose `up` passes it); here the pure decision and the mark the stack writes."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.model.kueue import OWNER_ANNOTATION, namespace_owner
from kueue_cohorts.components.model.multikueue import worker_identity
from kueue_cohorts.components.settings import parse_settings
from kueue_cohorts.components.stack.preflight import LiveAccount, account_problems
from tests.helpers import stack_raw

OWNER = namespace_owner("kueue-cohorts", "dev")
OTHER = namespace_owner("kueue-cohorts", "staging")


def _settings(account: str = "multikueue"):
    raw = stack_raw("dev")
    raw["multiKueue"] = {"managerTrainer": "CRDsOnly", "workers": [{"name": "w0"}, {"name": "w1",
                                                                                  "serviceAccount": account}],
                         "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["w0", "w1"]}]}
    return parse_settings(raw)


STATES = st.sampled_from(["absent", "ours", "other", "unmarked", "legacy"])


def _live(state: str, name: str) -> LiveAccount | None:
    return {"absent": None, "ours": LiveAccount("kueue-system", name, OWNER),
            "other": LiveAccount("kueue-system", name, OTHER, True),
            "unmarked": LiveAccount("kueue-system", name),
            "legacy": LiveAccount("kueue-system", name, None, True)}[state]


@settings(max_examples=40, deadline=None)
@given(state=STATES, account=st.sampled_from(["multikueue", "mk-eu", "ci-bot"]))
def test_an_account_that_is_not_the_stacks_is_refused_at_its_key(state, account):
    worker = _settings(account).multi_kueue.workers[1]
    problems = account_problems(1, worker, _live(state, account), OWNER)
    assert bool(problems) == (state in ("other", "unmarked"))
    for problem in problems:
        assert problem.key == "kueue-cohorts:multiKueue.workers[1].serviceAccount"
        assert problem.value == account
        assert problem.fix.startswith("name an account of its own in multiKueue.workers[].serviceAccount")
        assert f"kubectl annotate serviceaccount -n kueue-system {account} {OWNER_ANNOTATION}={OWNER}" in problem.fix
        assert ("stack kueue-cohorts/staging created it" in problem.rule) == (state == "other")


def test_the_account_the_stack_writes_carries_its_mark():
    settings_ = _settings()
    [account] = [m for m in worker_identity(settings_, settings_.multi_kueue.workers[0], OWNER)
                 if m["kind"] == "ServiceAccount"]
    assert account["metadata"]["annotations"] == {OWNER_ANNOTATION: OWNER}
    assert account["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "kueue-cohorts"
    live = LiveAccount("kueue-system", account["metadata"]["name"],
                       account["metadata"]["annotations"][OWNER_ANNOTATION])
    assert account_problems(0, settings_.multi_kueue.workers[0], live, OWNER) == []
