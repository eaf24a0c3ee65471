"""The GitHub workflows: linted by actionlint (built from its Go module, pinned in toolchain/versions.toml) and
checked for the shape issue 8 asks for. The test fails if actionlint cannot be built."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from kueue_cohorts import toolchain

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


@pytest.fixture(scope="module")
def actionlint() -> Path:
    """The pinned actionlint binary (built if missing; a build failure fails the test)."""
    return toolchain.ensure(["actionlint"])["actionlint"]


def _load(name: str) -> dict:
    doc = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as True
    return doc


def _run(actionlint: Path, *paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(actionlint), "-no-color", *map(str, paths)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_every_workflow_passes_actionlint(actionlint):
    assert {p.name for p in WORKFLOWS} >= {"preview.yml", "deploy.yml"}
    proc = _run(actionlint, *WORKFLOWS)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_rejects_a_broken_workflow(actionlint, tmp_path):
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    needs: missing\n"
                   "    steps:\n      - run: echo ${{ matrix.nope }}\n")
    proc = _run(actionlint, bad)
    assert proc.returncode == 1 and "missing" in proc.stdout


def _steps_using(job: dict, action: str) -> list[dict]:
    return [s for s in job["steps"] if str(s.get("uses", "")).startswith(action)]


def test_preview_workflow_previews_every_stack_with_policy_and_comments():
    doc = _load("preview.yml")
    assert set(doc["on"]["pull_request"]["paths"]) >= {
        "stacks/**", "kueue_cohorts/components/**", "kueue_cohorts/policy/**"}
    stacks = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
    summary_job, comment_job = (doc["jobs"][k] for k in ("summary", "comment"))
    live_doc = _load("live-preview.yml")
    live, live_comment_job = live_doc["jobs"]["live-preview"], live_doc["jobs"]["comment"]
    assert sorted(summary_job["strategy"]["matrix"]["stack"]) == stacks
    assert sorted(comment_job["strategy"]["matrix"]["stack"]) == stacks
    sandboxed = {s for s in stacks if (yaml.safe_load((ROOT / "stacks" / f"Pulumi.{s}.yaml").read_text())["config"]
                                       .get("kueue-cohorts:cluster") or {}).get("mode", "sandbox") == "sandbox"}
    assert sandboxed >= {"dev"}
    assert set(live["strategy"]["matrix"]["stack"]) == set(stacks) - sandboxed  # their cluster is the local sandbox
    assert set(live_comment_job["strategy"]["matrix"]["stack"]) == set(stacks) - sandboxed
    assert comment_job["needs"] == ["summary"] and live_comment_job["needs"] == ["live-preview"]
    (preview,) = [s for s in live["steps"] if "python -m kueue_cohorts.deploy preview" in str(s.get("run", ""))]
    assert preview["env"]["PULUMI_BACKEND_URL"] == "${{ secrets.PULUMI_BACKEND_URL }}"
    assert preview["env"]["PULUMI_CONFIG_PASSPHRASE"] == "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}"
    for stack in stacks:
        assert (ROOT / "kueue_cohorts" / "policy" / "config" / f"{stack}.json").is_file(), stack
    summary = next(s for s in summary_job["steps"] if s.get("name") == "make pr-summary")
    assert "make pr-summary STACK=" in summary["run"] and "BASE=" in summary["run"]
    (upload,) = _steps_using(summary_job, "actions/upload-artifact@")
    assert upload["with"]["path"] == "pr-summary-${{ matrix.stack }}.md"
    (summary_comment,) = _steps_using(comment_job, "marocchino/sticky-pull-request-comment@")
    (live_comment,) = _steps_using(live_comment_job, "marocchino/sticky-pull-request-comment@")
    assert summary_comment["with"]["path"] == "pr-summary-${{ matrix.stack }}.md"
    assert live_comment["with"]["path"] == "live-preview-${{ matrix.stack }}.md"
    for step in (summary_comment, live_comment):
        assert "${{ matrix.stack }}" in step["with"]["header"]


def test_deploy_workflow_runs_staging_then_prod_behind_its_environment():
    doc = _load("deploy.yml")
    assert doc["on"]["push"]["branches"] == ["main"]
    assert doc["concurrency"]["cancel-in-progress"] is False
    staging, prod = doc["jobs"]["staging"], doc["jobs"]["prod"]
    assert prod["needs"] == "staging" and prod["environment"] == "prod"
    for job, stack in ((staging, "staging"), (prod, "prod")):
        (up,) = [s for s in job["steps"] if "python -m kueue_cohorts.deploy up" in str(s.get("run", ""))]
        assert up["run"].strip().endswith(f"python -m kueue_cohorts.deploy up --stack {stack}")
        # deploy.engine passes it with the pack
        assert (ROOT / "kueue_cohorts" / "policy" / "config" / f"{stack}.json").is_file()
    assert "required reviewers" in (ROOT / ".github" / "workflows" / "deploy.yml").read_text().lower()


@pytest.mark.parametrize("status", [0, 1, 2])
def test_a_failing_summary_is_still_shown_and_posted_and_fails_the_job(tmp_path, status):
    """`make pr-summary` exits 1 after writing the summary of a stack file that does not validate: the step still
    shows it, the artifact the comment job posts is still uploaded, and the job fails with the command's status."""
    summary_job = _load("preview.yml")["jobs"]["summary"]
    step = next(s for s in summary_job["steps"] if s.get("name") == "make pr-summary")
    (bin_dir := tmp_path / "bin").mkdir()
    (bin_dir / "make").write_text(f"#!/bin/sh\necho '# the summary' > pr-summary-$STACK.md\nexit {status}\n")
    (bin_dir / "make").chmod(0o755)
    shown = tmp_path / "step-summary.md"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "STACK": "staging", "BASE": "origin/main",
           "GITHUB_STEP_SUMMARY": str(shown)}
    result = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert result.returncode == status
    assert shown.read_text() == "# the summary\n"
    (upload,) = _steps_using(summary_job, "actions/upload-artifact@")
    assert upload["if"] == "always()"
