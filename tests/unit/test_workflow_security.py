"""The GitHub workflows keep secrets away from pull-request code (issue 14, item 2), asserted on the parsed YAML.

actionlint (tests/prsummary/test_prsummary_workflows.py) checks that they are valid; these tests check the security
properties, each over every workflow and job it concerns, so a new job or step is held to them too.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW_DIR = ROOT / ".github" / "workflows"
WORKFLOWS = sorted(WORKFLOW_DIR.glob("*.yml"))
SECRET = re.compile(r"\$\{\{[^}]*\bsecrets\.")
TOKEN = re.compile(r"\$\{\{[^}]*\b(secrets\.GITHUB_TOKEN|github\.token)\b")
SHA_PIN = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}$")
MAIN_ONLY = "github.ref == 'refs/heads/main'"


def load(path: Path) -> dict[str, Any]:
    """The workflow as data; YAML 1.1 reads the key `on` as True, so it is put back under "on"."""
    doc = yaml.safe_load(path.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))
    return doc


def text(value: Any) -> str:
    """Every string inside ``value`` (keys and values), for searching expressions."""
    return yaml.safe_dump(value, sort_keys=True, width=10_000)


def jobs(name: str) -> dict[str, dict]:
    return load(WORKFLOW_DIR / name)["jobs"]


def all_steps():
    for path in WORKFLOWS:
        for job_name, job in load(path)["jobs"].items():
            for step in job.get("steps", []):
                yield path.name, job_name, step


def kubeconfig_stacks() -> list[str]:
    """The stacks whose stack file targets a real cluster (cluster mode kubeconfig)."""
    found = []
    for path in sorted((ROOT / "stacks").glob("Pulumi.*.yaml")):
        config = yaml.safe_load(path.read_text()).get("config") or {}
        if (config.get("kueue-cohorts:cluster") or {}).get("mode") == "kubeconfig":
            found.append(path.name[len("Pulumi."):-len(".yaml")])
    return found


def test_there_are_workflows_to_check():
    assert {p.name for p in WORKFLOWS} >= {"preview.yml", "deploy.yml"}
    assert kubeconfig_stacks() == ["prod", "staging"]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_third_party_action_is_pinned_by_commit_sha_with_its_tag_named(path):
    lines = path.read_text().splitlines()
    uses = [(i, line) for i, line in enumerate(lines) if re.match(r"^\s*(- )?uses:", line)]
    assert uses
    for i, line in uses:
        ref = line.split("uses:", 1)[1].split("#", 1)[0].strip()
        if ref.startswith("./"):
            continue
        assert SHA_PIN.match(ref), f"{path.name}:{i + 1}: {ref} is not pinned by a 40-hex commit SHA"
        assert re.search(r"#\s*v\d+(\.\d+)*\s*$", line), f"{path.name}:{i + 1}: name the tag after the SHA"


def test_checkout_never_persists_credentials():
    checkouts = [(w, j, s) for w, j, s in all_steps() if str(s.get("uses", "")).startswith("actions/checkout@")]
    assert len(checkouts) >= 4
    for workflow, job, step in checkouts:
        assert (step.get("with") or {}).get("persist-credentials") is False, f"{workflow} {job}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_secrets_are_given_only_to_steps(path):
    doc = load(path)
    assert not SECRET.search(text(doc.get("env") or {})), "workflow-level env holds a secret"
    for name, job in doc["jobs"].items():
        assert not SECRET.search(text(job.get("env") or {})), f"job {name}: job-level env holds a secret"
        assert not SECRET.search(text(job.get("defaults") or {})), name
        for step in job.get("steps", []):
            assert not SECRET.search(str(step.get("run", ""))), f"{name}: a secret expanded into a script"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_only_jobs_in_a_github_environment_read_secrets_and_top_permissions_are_read_only(path):
    doc = load(path)
    assert doc["permissions"] == {"contents": "read"}
    for name, job in doc["jobs"].items():
        if SECRET.search(text(job)):
            assert job.get("environment"), f"job {name} reads secrets outside a GitHub environment"


def test_summary_job_holds_no_secret_and_no_write_token():
    job = jobs("preview.yml")["summary"]
    assert not SECRET.search(text(job)) and not TOKEN.search(text(job))
    assert job["permissions"] == {"contents": "read"}
    assert "environment" not in job
    assert any("make pr-summary" in str(s.get("run", "")) for s in job["steps"])


def test_live_preview_uses_its_own_read_only_environment_per_real_stack():
    doc = load(WORKFLOW_DIR / "preview.yml")
    job = doc["jobs"]["live-preview"]
    assert sorted(job["strategy"]["matrix"]["stack"]) == kubeconfig_stacks()
    assert job["environment"] == "preview-${{ matrix.stack }}"
    deploy_envs = {j["environment"] for j in jobs("deploy.yml").values()}
    assert not any(env.startswith("preview-") for env in deploy_envs)
    assert job["permissions"] == {"contents": "read"}
    assert "head.repo.full_name == github.repository" in job["if"]  # forks get no secrets
    secrets = set(re.findall(r"secrets\.([A-Z_]+)", text(job)))
    assert secrets == {"PREVIEW_KUBECONFIG", "PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE"}
    assert "secrets.KUBECONFIG" not in text(doc)  # the deploy kubeconfig is never in the preview workflow
    (preview,) = [s for s in job["steps"] if str(s.get("uses", "")).startswith("pulumi/actions@")]
    assert preview["with"]["command"] == "preview" and preview["with"]["comment-on-pr"] is False


def test_comment_job_runs_no_pull_request_code():
    job = jobs("preview.yml")["comment"]
    assert job["permissions"] == {"pull-requests": "write"}
    assert not SECRET.search(text(job))
    for step in job["steps"]:
        assert "run" not in step, "the job that holds the write token runs no script"
        assert not str(step.get("uses", "")).startswith("actions/checkout@"), "no checkout of the PR's code"


def test_only_the_comment_job_may_write():
    for path in WORKFLOWS:
        for name, job in load(path)["jobs"].items():
            writes = {k for k, v in (job.get("permissions") or {}).items() if v == "write"}
            assert not writes or (path.name, name) == ("preview.yml", "comment"), f"{path.name} {name}: {writes}"


def test_deploy_runs_only_for_main_including_dispatch():
    doc = load(WORKFLOW_DIR / "deploy.yml")
    assert doc["on"]["push"]["branches"] == ["main"]
    assert "workflow_dispatch" in doc["on"]
    for name, job in doc["jobs"].items():
        assert job.get("if") == MAIN_ONLY, f"job {name} must run only for refs/heads/main"
        assert job["environment"] == name
    header = (WORKFLOW_DIR / "deploy.yml").read_text().lower()
    assert "deployment branches" in header and "selected branches: main" in header


def test_every_secret_a_step_gets_is_in_that_steps_own_env_or_inputs():
    """A step that reads a secret gets it through its own ``env`` or ``with``; a step that runs the project's code
    (``make``) gets none."""
    for workflow, job, step in all_steps():
        if "make " in str(step.get("run", "")):
            assert not SECRET.search(text(step)), f"{workflow} {job}: {step.get('name')}"
        rest = {k: v for k, v in step.items() if k not in ("env", "with")}
        assert not SECRET.search(text(rest)), f"{workflow} {job}: {step.get('name')}"
