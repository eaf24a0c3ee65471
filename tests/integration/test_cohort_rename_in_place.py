"""Renaming a cohort updates its queues in place (issue 28, found with finding 10): the cohort components have fixed
Pulumi names (components/stack/program.py), so a new `inferenceTraining.cohort` or `sharedPool.cohort` changes
`spec.cohortName` and nothing else. While the components were named after the cohort, every child's URN changed:
the engine created the "new" resources over the same objects, then deleted the "old" ones, and with them the live
ClusterQueues, LocalQueues and tenant Namespaces. Judged by the real engine's preview of the second run."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.deploycli import bare_env, clone, deploy

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def project(tmp_path_factory, engine_binaries) -> Path:
    root = clone(tmp_path_factory.mktemp("clone") / "kueue-cohorts")
    for source in ("mixed", "staging"):  # staging has both layouts; its Kueue chart is left out (render time)
        doc = yaml.safe_load((root / "stacks" / f"Pulumi.{source}.yaml").read_text())
        doc["config"]["kueue-cohorts:cluster"] = {"mode": "render", "renderDir": "rendered"}
        doc["config"].get("kueue-cohorts:kueue", {})["install"] = False
        (root / "stacks" / f"Pulumi.ren-{source}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


@pytest.mark.parametrize("layout, source", [("inferenceTraining", "mixed"), ("inferenceTraining", "staging"),
                                            ("sharedPool", "staging")])
def test_a_new_cohort_name_updates_in_place(project, tmp_path, layout, source):
    env = bare_env(tmp_path)
    stack = f"ren-{source}"
    path = project / "stacks" / f"Pulumi.{stack}.yaml"
    original = path.read_text()
    try:
        first = deploy(project, "up", "--stack", stack, env=env)
        assert first.returncode == 0, first.stdout + first.stderr
        doc = yaml.safe_load(original)
        doc["config"][f"kueue-cohorts:{layout}"]["cohort"] = "renamed-cohort"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        second = deploy(project, "preview", "--stack", stack, env=env)
        out = second.stdout + second.stderr
        assert second.returncode == 0, out
        # Only the guardrails are named after the cohort (kueue-cohorts.<cohort>.<rule>): new ones are created before
        # the old ones go. No queue, namespace, priority class or volume is deleted or replaced.
        steps = re.findall(r"^\s*([-+~]|\+-|-\+)\s+(kubernetes:\S+)\s+(\S+)\s+(\w+)", out, re.M)
        moved = {(kind, op) for _, kind, _, op in steps if op in ("delete", "create", "replace")}
        guardrails = {"kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy",
                      "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"}
        assert {kind for kind, _ in moved} <= guardrails, out
        updated = {kind for _, kind, _, op in steps if op == "update"}
        assert "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue" in updated, out
    finally:
        path.write_text(original)
