"""The live preview of a pull request's stack file chooses nothing that runs (issue 38, class 1), run as the
workflow runs it: the steps of `.github/workflows/live-preview.yml` (read from the copy of the project, so the test
follows the workflow file), from the pull request's data checkout up to `python -m kueue_cohorts.deploy preview`, with
stand-in
secrets in the environment and a kubeconfig that points at a closed port.

On main the pull request's stack file named a kubeconfig the same pull request supplied (`policy/config/<stack>.json`
is JSON, hence a valid kubeconfig) whose user had an `exec` plugin: the preflight of `deploy preview` ran that
program, with the passphrase in its environment. Now the only file the job keeps is the stack file, every key that
selects a file, context, program or credential keeps the base's value, and a kubeconfig whose user runs a program is
refused before any kubeconfig is loaded.
"""
from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from tests.deploycli import bare_env, clone

STACK = "staging"
PASSPHRASE = "stand-in-passphrase"
BACKEND = "s3://stand-in-bucket/kueue-cohorts"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kubeconfig(user: dict[str, Any], context: str = STACK) -> dict[str, Any]:
    """A kubeconfig whose one context (`context`) points at a closed local port, with `user`."""
    return {"apiVersion": "v1", "kind": "Config", "current-context": context,
            "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{closed_port()}",
                                                   "insecure-skip-tls-verify": True}}],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}]}


def exec_user(marker: Path) -> dict[str, Any]:
    """A kubeconfig user whose exec plugin writes the passphrase it finds in its environment into `marker`."""
    script = (f'printf %s "$PULUMI_CONFIG_PASSPHRASE" > {marker}; printf \'%s\' '
              '\'{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",'
              '"status":{"token":"t"}}\'')
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "sh", "args": ["-c", script],
                     "interactiveMode": "Never"}}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return clone(tmp_path_factory.mktemp("clone") / "kueue-cohorts")


def expand(text: str, values: dict[str, str]) -> str:
    """The workflow's `${{ ... }}` expressions replaced by `values` (each expression by its text)."""
    def one(match: re.Match[str]) -> str:
        return values[match.group(1).strip()]
    return re.sub(r"\$\{\{(.*?)\}\}", one, text)


def live_preview(project: Path, tmp: Path, pr_files: dict[str, str], job_kubeconfig: dict[str, Any]
                 ) -> subprocess.CompletedProcess[str]:
    """Run the live-preview job of the project's workflow on the pull request `pr_files` (path -> text): its data
    checkout (the sparse paths, into its `path`), then each `run:` step up to the one with id `preview`, skipping
    only the step that builds the venv and toolchain (the copy links the running venv; nothing is built). Secrets
    are stand-ins; PREVIEW_KUBECONFIG is `job_kubeconfig`. Returns the preview step's process."""
    work = tmp / "work"
    subprocess.run(["cp", "-a", f"{project}/.", str(work)], check=True)
    runner_temp = tmp / "runner-temp"
    runner_temp.mkdir()
    doc = yaml.safe_load((work / ".github" / "workflows" / "live-preview.yml").read_text())
    job = doc["jobs"]["live-preview"]
    values = {"matrix.stack": STACK, "runner.temp": str(runner_temp),
              "secrets.PREVIEW_KUBECONFIG": yaml.safe_dump(job_kubeconfig),
              "secrets.PULUMI_BACKEND_URL": BACKEND, "secrets.PULUMI_CONFIG_PASSPHRASE": PASSPHRASE}
    env = bare_env(tmp, KUEUE_COHORTS_CACHE=str(tmp / "empty-cache"), RUNNER_TEMP=str(runner_temp))
    env.pop("PULUMI_BACKEND_URL")
    for step in job["steps"]:
        uses = str(step.get("uses", ""))
        if uses.startswith("actions/checkout@") and "head" in str(step["with"].get("ref", "")):
            sparse = str(step["with"].get("sparse-checkout", "")).split()
            tree = {str(f.relative_to(project)): f.read_text() for p in sparse for f in (project / p).rglob("*")
                    if f.is_file()}  # the pull request's tree: the base's files, with its own changes
            for rel, content in {**tree, **pr_files}.items():  # what a sparse checkout of it puts there
                if any(rel == p or rel.startswith(p.rstrip("/") + "/") for p in sparse):
                    target = work / step["with"]["path"] / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(content)
            continue
        script = str(step.get("run", ""))
        if not script or "make venv" in script:
            continue
        step_env = {**env, **{k: expand(str(v), values) for k, v in (step.get("env") or {}).items()}}
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=work,
                              env=step_env, capture_output=True, text=True, timeout=180)
        if step.get("id") == "preview" or proc.returncode != 0:
            return proc
    raise AssertionError("the workflow has no step with id preview")


def pr_stack(project: Path, change: Callable[[dict[str, Any]], None]) -> str:
    """The base's stack file of STACK with `change` applied to its config (a pull request's edit)."""
    doc = yaml.safe_load((project / "stacks" / f"Pulumi.{STACK}.yaml").read_text())
    change(doc["config"])
    return yaml.safe_dump(doc, sort_keys=False)


def _cluster(**keys: Any) -> Callable[[dict[str, Any]], None]:
    def change(config: dict[str, Any]) -> None:
        config["kueue-cohorts:cluster"] = {**config["kueue-cohorts:cluster"], **keys}
    return change


TOKEN_USER = {"token": "stand-in-token"}


def test_a_pull_request_kubeconfig_with_an_exec_plugin_never_runs(project, tmp_path):
    """The hole of issue 38: `cluster.kubeconfig: policy/config/staging.json`, that file a kubeconfig whose user
    has an exec plugin. On main the program ran (with the passphrase); now the key keeps the base's value (none:
    the job's own kubeconfig) and the PR's JSON file is not even copied."""
    marker = tmp_path / "ran"
    files = {f"stacks/Pulumi.{STACK}.yaml": pr_stack(project, _cluster(kubeconfig=f"policy/config/{STACK}.json")),
             f"policy/config/{STACK}.json": json.dumps(kubeconfig(exec_user(marker)))}
    proc = live_preview(project, tmp_path, files, kubeconfig(TOKEN_USER))
    assert not marker.exists(), f"the pull request's program ran and read {marker.read_text()!r}"
    assert ("deploy: kueue-cohorts:cluster.kubeconfig: the pull request's value is not used; the live preview "
            "takes it from the base branch") in proc.stdout + proc.stderr
    assert proc.returncode == 1 and "did not answer GET /version" in proc.stdout  # the job's own, a closed port


def test_a_stack_file_that_is_its_own_kubeconfig_is_not_loaded(project, tmp_path):
    """The stack file itself is the one file the job keeps: a pull request that makes it a kubeconfig too (YAML
    with users and contexts beside config) and points cluster.kubeconfig at it is pinned as well."""
    marker = tmp_path / "ran"
    text = pr_stack(project, _cluster(kubeconfig=f"pull-request/Pulumi.{STACK}.yaml", context=STACK))
    both = {**yaml.safe_load(text), **{k: v for k, v in kubeconfig(exec_user(marker)).items() if k != "kind"}}
    files = {f"stacks/Pulumi.{STACK}.yaml": yaml.safe_dump(both, sort_keys=False)}
    proc = live_preview(project, tmp_path, files, kubeconfig(TOKEN_USER))
    assert not marker.exists(), f"the pull request's program ran and read {marker.read_text()!r}"
    assert "kueue-cohorts:cluster.kubeconfig: the pull request's value is not used" in proc.stdout + proc.stderr


def test_a_kubeconfig_with_an_exec_user_is_refused_before_it_is_loaded(project, tmp_path):
    """Whatever selects it: the job's own kubeconfig with an exec user is refused before anything loads it (on main
    the preflight ran the program)."""
    marker = tmp_path / "ran"
    files = {f"stacks/Pulumi.{STACK}.yaml": pr_stack(project, lambda config: None)}
    proc = live_preview(project, tmp_path, files, kubeconfig(exec_user(marker)))
    assert not marker.exists(), f"the program ran and read {marker.read_text()!r}"
    assert proc.returncode == 2
    assert (f"  KUBECONFIG {tmp_path / 'runner-temp' / 'kubeconfig'}: user u has exec, which the client would run "
            "while loading it. Fix: give the live preview a kubeconfig with a token (docs/previews.md, \"The "
            "preview identity\")") in (proc.stdout + proc.stderr).splitlines()


def test_a_context_of_the_pull_request_is_not_used(project, tmp_path):
    """cluster.context selects a credential of the job's kubeconfig: the pull request's `other` is not used (on
    main the preflight reported context "other")."""
    files = {f"stacks/Pulumi.{STACK}.yaml": pr_stack(project, _cluster(context="other"))}
    proc = live_preview(project, tmp_path, files, kubeconfig(TOKEN_USER))
    assert "kueue-cohorts:cluster.context: the pull request's value is not used" in proc.stdout + proc.stderr
    assert 'context "other"' not in proc.stdout + proc.stderr
    assert f'context "{STACK}"' in proc.stdout + proc.stderr
