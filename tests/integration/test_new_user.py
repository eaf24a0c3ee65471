"""The project and every stack load in the engine as a new user's would: a fresh copy, a bare environment.

The copy holds exactly the files git tracks (what a clone gets), its .venv is the project venv (what `make venv`
makes), and the commands are the ones `make toolchain` and `make preview STACK=<name>` run, with an environment of
HOME, PATH and LANG only, plus a temporary PULUMI_BACKEND_URL so the user's own state is not touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from kueue_cohorts.deploy import scratch
from kueue_cohorts.deploy.cli import PREVIEW_FIRST, UP_STARTS
from tests.integration.project import STACKS, offline_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def clone(tmp_path_factory, engine_binaries) -> Path:
    """A copy of the git-tracked files of the working tree, with .venv and policy/venv linked to the project venv."""
    return scratch.clone(tmp_path_factory.mktemp("clone") / "kueue-cohorts")


def _bare_env(tmp: Path) -> dict[str, str]:
    go_dir = str(Path(shutil.which("go")).parent) if shutil.which("go") else ""
    return {
        "HOME": os.environ["HOME"],
        "PATH": os.pathsep.join(p for p in (go_dir, "/usr/local/bin", "/usr/bin", "/bin") if p),
        "LANG": "C.UTF-8",
        "PULUMI_BACKEND_URL": f"file://{tmp / 'state'}",
    }


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(cwd / ".venv" / "bin" / "python"), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=800)


def test_toolchain_is_found_cached_within_seconds(clone, tmp_path):
    proc = _run(["-m", "kueue_cohorts.toolchain", "ensure"], clone, _bare_env(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "building" not in proc.stdout, proc.stdout
    for name in ("pulumi", "pulumi-resource-kubernetes", "kube-apiserver", "kueue"):
        assert f"{name}\t" in proc.stdout


@pytest.mark.parametrize("name", STACKS)
def test_every_stack_previews_from_a_fresh_copy(clone, tmp_path, name):
    stack_file = clone / "stacks" / f"Pulumi.{name}.yaml"
    original = stack_file.read_text()
    doc = yaml.safe_load(original)
    doc["config"] = offline_config(doc["config"], tmp_path / "rendered")  # no cluster, no chart registry here
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    try:
        proc = _run(["-m", "kueue_cohorts.deploy", "preview", "--stack", name], clone, _bare_env(tmp_path))
    finally:
        stack_file.write_text(original)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"pulumi preview --stack {name} done" in proc.stdout
    assert "to create" in proc.stdout


def test_up_then_destroy_through_the_deploy_cli_with_the_policy_pack_on(clone, tmp_path):
    """``make up`` then ``make destroy``, as a user runs them (policy pack on by default: up gets it, destroy must
    not, the CLI has no such flag there). Render mode, so no cluster: refresh has nothing to read there."""
    stack_file = clone / "stacks" / "Pulumi.dev.yaml"
    original = stack_file.read_text()
    doc = yaml.safe_load(original)
    doc["config"] = offline_config(doc["config"], tmp_path / "rendered")
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    env = _bare_env(tmp_path)
    try:
        for command in ("up", "destroy"):
            proc = _run(["-m", "kueue_cohorts.deploy", command, "--stack", "dev"], clone, env)
            assert proc.returncode == 0, f"deploy {command}:\n{proc.stdout}{proc.stderr}"
            assert f"pulumi {command} --stack dev done" in proc.stdout
    finally:
        stack_file.write_text(original)


def test_a_mandatory_stack_policy_violation_stops_up_before_any_change(clone, tmp_path):
    """Issue 13 (12): `python -m kueue_cohorts.deploy up` ran `pulumi up --skip-preview`, where stack policies judge
    the objects
    only after they were created. A program that adds, by hand, a training WorkloadPriorityClass above inference
    (a stack policy, workload-priority-class) must leave nothing created: its dry run shows a resource the assembler
    did not build (issue 40 item 7, deploy/passes.py), so deploy says so, naming it, and previews with the pack
    first."""
    stack_file, program = clone / "stacks" / "Pulumi.dev.yaml", clone / "__main__.py"
    originals = stack_file.read_text(), program.read_text()
    doc = yaml.safe_load(originals[0])
    rendered = tmp_path / "rendered"
    doc["config"] = offline_config(doc["config"], rendered)
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    program.write_text(originals[1] + '''
from kueue_cohorts.components.resources.manifest import ManifestResource

ManifestResource("rogue-priority", {
    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "value": 5000,
    "metadata": {"name": "rogue-prio", "labels": {"kueue-cohorts/role": "training"}}},
    pulumi.ResourceOptions(provider=provider))
''')
    try:
        proc = _run(["-m", "kueue_cohorts.deploy", "up", "--stack", "dev"], clone, _bare_env(tmp_path))
    finally:
        stack_file.write_text(originals[0])
        program.write_text(originals[1])
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "deploy: up in two passes: the program registers 1 resource(s) the assembler did not build" in out, out
    assert "not judged by the settings check: kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass rogue-priority " \
           "(rogue-prio)" in out, out
    assert PREVIEW_FIRST in out, out
    # the pack's refusal of the hand-added class, not a guardrail's name that happens to contain the policy's
    assert any("[mandatory]" in line and "workload-priority-class" in line for line in out.splitlines()), out
    assert UP_STARTS not in out, out
    written = [p for p in rendered.rglob("*") if p.is_file()] if rendered.exists() else []
    assert written == [], f"up created objects before the policy refused it: {written[:5]}"
