"""Issue 29 item 2 through the deploy CLI: a kubeconfig stack (a lab or kind cluster) may run with a local file
backend and the dev passphrase only when its stack file says ``kueue-cohorts:protected: false`` explicitly; every
run then prints a warning line, and a stack whose name reads as production stays protected whatever its file says.

Runs stop before any engine call (an empty toolchain cache, no kubeconfig): past the guard, at the cluster preflight.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from kueue_cohorts.deploy import stackfile
from kueue_cohorts.deploy.settings import DEV_PASSPHRASE
from tests.deploycli import bare_env, clone, deploy, edit_stack

WARNING = "with protection off (kueue-cohorts:protected: false in its stack file)"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A clone with copies of staging (kubeconfig mode) under several names and protected values."""
    root = clone(tmp_path_factory.mktemp("clone") / "kueue-cohorts")
    staging = (root / "stacks" / "Pulumi.staging.yaml").read_text()
    for name, flag in {"lab": False, "lab-string": "false", "kind": "False", "lab-absent": None, "lab-true": True,
                       "prod-eu": False, "eu-production": False, "lab-secret": {"secure": "v1:AAAA:BBBB"}}.items():
        (root / "stacks" / f"Pulumi.{name}.yaml").write_text(staging)
        if flag is not None:
            edit_stack(root, name, {"protected": flag})
    edit_stack(root, "prod", {"protected": False})
    return root


def _preview(project: Path, tmp_path: Path, stack: str) -> tuple[int, str]:
    env = bare_env(tmp_path, KUEUE_COHORTS_CACHE=str(tmp_path / "empty-cache"), PULUMI_CONFIG_PASSPHRASE=DEV_PASSPHRASE,
                   KUBECONFIG=str(tmp_path / "no-kubeconfig"))
    env.pop("PULUMI_BACKEND_URL")  # the default local file backend, as after `pulumi login --local`
    proc = deploy(project, "preview", "--stack", stack, env=env, timeout=120)
    assert "Traceback" not in proc.stderr + proc.stdout
    assert not (tmp_path / "state" / ".pulumi").exists()
    return proc.returncode, proc.stderr


@pytest.mark.parametrize("stack", ["lab", "lab-string", "kind"])
def test_an_explicit_opt_out_runs_with_a_local_backend_and_warns(project, tmp_path, stack):
    code, err = _preview(project, tmp_path, stack)
    assert "is protected" not in err, err
    assert f"deploy: warning: stack {stack!r} targets a real cluster (context 'staging') {WARNING}" in err, err
    assert code == 2 and "kubeconfig" in err  # stopped at the cluster preflight: no kubeconfig here


@pytest.mark.parametrize("stack", ["lab-absent", "lab-true", "lab-secret", "prod", "prod-eu", "eu-production"])
def test_without_an_explicit_false_or_with_a_production_name_the_stack_stays_protected(project, tmp_path, stack):
    code, err = _preview(project, tmp_path, stack)
    assert code == 2 and f"stack {stack!r} is protected because" in err, err
    assert "PULUMI_BACKEND_URL is not set" in err and "public dev passphrase" in err
    assert WARNING not in err
    if stack.startswith("prod") or stack.endswith("production"):
        assert f"kueue-cohorts:protected = false is ignored: stack {stack!r} reads as production" in err


@pytest.mark.parametrize("name, production", [("prod", True), ("PROD", True), ("eu-prod", True),
                                              ("prod.gpu", True), ("production_2", True), ("product", False),
                                              ("prodigy", False), ("lab", False), ("staging", False)])
def test_production_names(name, production):
    assert stackfile.production_name(name) is production
