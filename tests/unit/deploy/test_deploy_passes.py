"""`deploy up` runs one engine pass when every resource the program registers came from the assembler, else a preview
with the policy pack first (issue 40 item 7, deploy/passes.py).

The real __main__.py (and copies of it with a resource added by hand) runs under the SDK's mocks as deploy's dry run
does, on every stack of stacks/ switched to render mode (no cluster) and on a MultiKueue stack; the decision is read
as deploy prints it."""
from __future__ import annotations

import argparse
import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kueue_cohorts.benchmarks.engine import HAND_ADDED, shared_pool_stack
from kueue_cohorts.components.checks.validation import check_stack_file, validate
from kueue_cohorts.components.model.admission import admission_manifests
from kueue_cohorts.components.model.assembly import assemble
from kueue_cohorts.components.model.kueue import namespace_owner
from kueue_cohorts.components.settings import raw_from_stack_file
from kueue_cohorts.deploy import cli, engine, passes
from kueue_cohorts.deploy.live_preflight import Identity, LiveCluster
from tests.helpers import ROOT, STACKS

STACK_NAMES = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in STACKS.glob("Pulumi.*.yaml"))
OWNER = namespace_owner(engine.PROJECT_NAME, "check")


def _project(tmp: Path, config: dict, extra: str = "") -> tuple[Path, Path]:
    """A project dir with stacks/Pulumi.check.yaml (``config`` in render mode) and a __main__.py: the repo's, with
    ``extra`` appended (run with the repo on sys.path, as the inline program runs it)."""
    config = copy.deepcopy(config)
    config["kueue-cohorts:cluster"] = {"mode": "render", "renderDir": str(tmp / "rendered")}
    (tmp / "stacks").mkdir(exist_ok=True)
    stack_file = tmp / "stacks" / "Pulumi.check.yaml"
    stack_file.write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    program = tmp / "__main__.py"
    text = (ROOT / "__main__.py").read_text().replace("root = Path(__file__).resolve().parent",
                                                      f"root = Path({str(ROOT)!r})")
    program.write_text(f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n" + text + extra)
    return program, stack_file


def _decide(tmp: Path, config: dict, extra: str = "") -> passes.Decision:
    program, stack_file = _project(tmp, config, extra)
    checked, rendered = check_stack_file(stack_file, OWNER)
    return passes.decide(engine.inline_program(program, tmp), engine.PROJECT_NAME, "check", stack_file,
                         assemble(checked, OWNER, rendered))


def _config(name: str) -> dict:
    return yaml.safe_load((STACKS / f"Pulumi.{name}.yaml").read_text())["config"]


def _multikueue() -> dict:
    config = _config("dev")
    config["kueue-cohorts:multiKueue"] = {
        "managerTrainer": "CRDsOnly",
        "workers": [{"name": "worker-1"}, {"name": "worker-2", "serviceAccount": "mk",
                                           "nodePools": config["kueue-cohorts:nodePools"]}],
        "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["worker-2", "worker-1"]}]}
    return config


@pytest.mark.parametrize("name", [*STACK_NAMES, "dev-multikueue"])
def test_the_shipped_program_runs_up_in_one_pass(tmp_path, name):
    decision = _decide(tmp_path, _multikueue() if name == "dev-multikueue" else _config(name))
    assert decision.passes == 1, decision.lines()
    assert decision.unjudged == ()
    assert decision.lines()[0].startswith("up in one pass: the program registers only the ")


#: Resources a user could add to __main__.py by hand; each must make `up` preview first, named in the lines.
ADDED = {
    "a training WorkloadPriorityClass above inference": ('''
from kueue_cohorts.components.resources.manifest import ManifestResource as _Manifest
_Manifest("rogue-priority", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
          "metadata": {"name": "rogue-prio", "labels": {"kueue-cohorts/role": "training"}}, "value": 5000},
          pulumi.ResourceOptions(provider=provider))
''', "kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass rogue-priority (rogue-prio)"),
    "a second copy of an assembled object, changed": ('''
from kueue_cohorts.components.resources.manifest import ManifestResource as _Manifest
_q = next(r for r in stack.registered() if r.manifest["kind"] == "ClusterQueue")
_Manifest("cq-again", {**_q.manifest, "spec": {**_q.manifest["spec"], "cohortName": "elsewhere"}},
          pulumi.ResourceOptions(provider=provider))
''', "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue cq-again (c12-inference-cq)"),
    "an object on the default provider": ('''
import pulumi_kubernetes as _k8s
_k8s.core.v1.ConfigMap("side-config", metadata={"name": "side", "namespace": "default"}, data={"a": "b"})
''', "kubernetes:core/v1:ConfigMap side-config (default/side)"),
    "a remote component (objects its provider expands)": ('''
import pulumi_kubernetes as _k8s
_k8s.yaml.v2.ConfigGroup("extra-yaml", yaml="apiVersion: v1\\nkind: Namespace\\nmetadata: {name: x}\\n",
                         opts=pulumi.ResourceOptions(provider=provider))
''', "kubernetes:yaml/v2:ConfigGroup extra-yaml"),
    "the benchmark's two-pass variant (benchmarks/engine.py)": (
        HAND_ADDED["two-pass"], "kubernetes:core/v1:ConfigMap bench-hand-added (default/bench-hand-added)"),
}


@pytest.mark.parametrize("added", sorted(ADDED))
def test_a_resource_added_by_hand_makes_up_preview_first_and_is_named(tmp_path, added):
    code, named = ADDED[added]
    decision = _decide(tmp_path, _config("dev"), code)
    assert decision.passes == 2, decision.lines()
    assert [r.describe() for r in decision.unjudged] == [named]
    assert decision.lines()[0].startswith("up in two passes: the program registers 1 resource(s) the assembler did "
                                          "not build, which only the policy pack judges")
    assert decision.lines()[1] == f"  not judged by the settings check: {named}"


def test_a_dry_run_that_raises_means_two_passes(tmp_path):
    decision = _decide(tmp_path, _config("dev"), '\nraise RuntimeError("the cluster is gone")\n')
    assert decision.passes == 2
    assert decision.lines() == ["up in two passes: the dry run of the program failed (RuntimeError: the cluster is "
                                "gone), so the preview with the policy pack comes first"]


def test_a_secret_config_value_means_two_passes(tmp_path):
    config = _config("dev")
    config["kubernetes:token"] = {"secure": "v1:abc"}
    decision = _decide(tmp_path, config)
    assert decision.passes == 2
    assert "DryRunError: the stack file holds secret values (kubernetes:token)" in decision.reason


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tenants=st.integers(min_value=1, max_value=12), drop=st.booleans())
def test_judge_finds_every_extra_and_changed_registration(tmp_path_factory, tenants, drop):
    """Over shared pools of any size: the program's own registrations are all judged; with one of its Kubernetes
    objects changed (a label added, as a stack transformation would), exactly that one is not."""
    tmp = tmp_path_factory.mktemp("pool")
    config = shared_pool_stack(tenants, "h")["config"]
    program, stack_file = _project(tmp, config)
    checked, rendered = check_stack_file(stack_file, OWNER)
    assembled = assemble(checked, OWNER, rendered)
    registered = passes.dry_run(engine.inline_program(program, tmp), engine.PROJECT_NAME, "check",
                                passes.engine_config(stack_file))
    assert passes.judge(registered, assembled) == []
    objects = [r for r in registered if r.custom and r.type_token.startswith("kubernetes:")]
    victim = objects[tenants % len(objects)]
    changed = passes.Registration(victim.type_token, victim.name, victim.urn, victim.parent, True, False,
                                  victim.provider, {**victim.inputs, "metadata": {
                                      **victim.inputs["metadata"], "labels": {"added": "by-hand"}}})
    others = [r for r in registered if r is not victim] if drop else registered
    assert passes.judge([*others, changed], assembled) == [changed]


def _checked(users: list[str], live: LiveCluster | None) -> cli.Checked:
    raw = copy.deepcopy(raw_from_stack_file(STACKS / "Pulumi.dev.yaml"))
    raw["admission"] = {"identities": {"users": users, "groups": []}}
    result = validate(raw, (), namespace_owner(engine.PROJECT_NAME, "dev"))
    assert result.settings is not None and result.rendered is not None, result.problems
    return cli.Checked(result.settings, result.rendered, live)


def _live_policies(users: list[str]) -> list[dict]:
    return [policy for _, policy, _ in admission_manifests(_checked(users, None).settings)]


def _args(no_policy: bool = False) -> argparse.Namespace:
    return argparse.Namespace(command="up", stack="dev", no_policy=no_policy)


def test_guardrails_that_must_go_first_mean_two_passes_before_any_dry_run():
    """deploy/cli.py `up_passes`: an `up` that adds the deploy identity to guardrails already live must preview first
    (their URNs come from its steps, deploy/guardrails_first.py); so must one whose live read knows the identity but
    could not list the policies. No dry run happens then (the stack is never asked for its program)."""
    who = Identity("alice", ("system:authenticated",))
    live = LiveCluster(admission_policies=_live_policies(["kueue-cohorts-admin"]), identity=who)
    decision = cli.up_passes(_args(), None, _checked(["kueue-cohorts-admin", "alice"], live))
    assert decision.passes == 2 and decision.lines()[0].startswith(
        "up in two passes: the update lets alice through ") and "tenant-label" in decision.reason, decision.reason
    unlisted = LiveCluster(identity=who, unreadable={"ValidatingAdmissionPolicy": "cannot list (403)"})
    decision = cli.up_passes(_args(), None, _checked(["kueue-cohorts-admin", "alice"], unlisted))
    assert decision.lines() == ["up in two passes: the live guardrails could not be read (cannot list (403)), so the "
                                "preview with the policy pack comes first (its steps say which to update first)"]
    assert cli.up_passes(_args(no_policy=True), None, None).passes == 1
    assert cli.up_passes(_args(), None, None).passes == 2
