"""Protected stacks through the deploy CLI (issue 14, item 1): a stack of cluster mode kubeconfig, or one its stack
file marks ``kueue-cohorts:protected: true``, refuses a local file backend, the dev passphrase and ``--no-policy``
before any engine call, naming the variable to set.

"Before any engine call" is checked by running with an empty toolchain cache: had the CLI reached the engine, it
would stop with the toolchain's error instead; and neither the backend directory nor the stack file is touched.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from kueue_cohorts.deploy.settings import DEV_PASSPHRASE
from tests.deploycli import bare_env, clone, deploy, edit_stack

SECRET = {"secure": "v1:AAAAAAAAAAAAAAAA:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"}
GOOD = {"PULUMI_BACKEND_URL": "s3://team-bucket/kueue-cohorts", "PULUMI_CONFIG_PASSPHRASE": "team-secret"}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = clone(tmp_path_factory.mktemp("clone") / "kueue-cohorts")
    # Protected by a setting (dev targets the sandbox, so only the mark protects these copies).
    for name, config in {
        "marked": {"protected": True},
        "marked-string": {"protected": "true"},            # what `pulumi config set protected true` writes
        "marked-secret": {"protected": SECRET},            # unreadable without the engine: read as true
        "secret-cluster": {"cluster": SECRET},             # secret cluster mode: read as a real cluster
        "marked-typo": {"protected": "yes"},               # not a boolean: warned, treated as protected
        "kms": {"protected": True},
    }.items():
        (root / "stacks" / f"Pulumi.{name}.yaml").write_text((root / "stacks" / "Pulumi.dev.yaml").read_text())
        edit_stack(root, name, config, top={"secretsprovider": "awskms://alias/kueue-cohorts"} if name == "kms"
                   else None)
        if name != "kms":
            doc = (root / "stacks" / f"Pulumi.{name}.yaml")
            doc.write_text("\n".join(ln for ln in doc.read_text().splitlines() if not ln.startswith("encryptionsalt")))
    # A secret elsewhere in the file (set with --secret --path) never crashes the reader.
    edit_stack(root, "marked", {"trainingRuntime": {"image": "registry.example/trainer:1",
                                                "env": {"HF_TOKEN": SECRET}}})
    return root


def _run(project: Path, tmp_path: Path, *args: str, **env: str):
    environment = bare_env(tmp_path, KUEUE_COHORTS_CACHE=str(tmp_path / "empty-cache"),
                           KUEUE_COHORTS_SANDBOX_DIR=str(tmp_path / "no-sandbox"), **env)
    before = {p: p.read_bytes() for p in (project / "stacks").glob("*.yaml")}
    proc = deploy(project, *args, env=environment, timeout=120)
    assert {p: p.read_bytes() for p in (project / "stacks").glob("*.yaml")} == before, "a stack file was written"
    assert not (tmp_path / "state" / ".pulumi").exists(), "the backend was touched"
    assert "Traceback" not in proc.stderr + proc.stdout
    return proc


PROTECTED = ["staging", "prod", "marked", "marked-string", "marked-secret", "secret-cluster", "marked-typo"]


@pytest.mark.parametrize("stack", PROTECTED)
@pytest.mark.parametrize("command", ["up", "preview", "destroy"])
def test_default_file_backend_and_dev_passphrase_are_refused(project, tmp_path, stack, command):
    proc = _run(project, tmp_path, command, "--stack", stack, PULUMI_BACKEND_URL=None)
    assert proc.returncode == 2, proc.stderr
    assert any(line.startswith(f"deploy: stack '{stack}' is protected because")
               for line in proc.stderr.splitlines()), proc.stderr
    assert "PULUMI_BACKEND_URL is not set" in proc.stderr
    assert "PULUMI_CONFIG_PASSPHRASE is not set" in proc.stderr
    assert "toolchain" not in proc.stderr.lower()


@pytest.mark.parametrize("stack", PROTECTED)
def test_explicit_file_backend_is_refused(project, tmp_path, stack):
    proc = _run(project, tmp_path, "up", "--stack", stack, PULUMI_BACKEND_URL=f"file://{tmp_path}/state",
                PULUMI_CONFIG_PASSPHRASE="team-secret")
    assert proc.returncode == 2
    assert f"PULUMI_BACKEND_URL=file://{tmp_path}/state is a local file backend" in proc.stderr
    assert "1 problem:" in proc.stderr


@pytest.mark.parametrize("stack", ["staging", "marked"])
def test_the_dev_passphrase_is_refused_however_it_is_given(project, tmp_path, stack):
    proc = _run(project, tmp_path, "up", "--stack", stack, PULUMI_BACKEND_URL=GOOD["PULUMI_BACKEND_URL"],
                PULUMI_CONFIG_PASSPHRASE=DEV_PASSPHRASE)
    assert proc.returncode == 2 and "PULUMI_CONFIG_PASSPHRASE is the public dev passphrase" in proc.stderr
    phrase = tmp_path / "phrase"
    phrase.write_text(DEV_PASSPHRASE + "\n")
    proc = _run(project, tmp_path, "up", "--stack", stack, PULUMI_BACKEND_URL=GOOD["PULUMI_BACKEND_URL"],
                PULUMI_CONFIG_PASSPHRASE_FILE=str(phrase))
    assert proc.returncode == 2 and f"PULUMI_CONFIG_PASSPHRASE_FILE={phrase} holds the public dev" in proc.stderr


@pytest.mark.parametrize("stack", PROTECTED)
def test_no_policy_is_refused(project, tmp_path, stack):
    proc = _run(project, tmp_path, "preview", "--stack", stack, "--no-policy", **GOOD)
    assert proc.returncode == 2
    assert "--no-policy is refused" in proc.stderr and "1 problem:" in proc.stderr


def test_a_kms_secrets_provider_needs_no_passphrase(project, tmp_path):
    proc = _run(project, tmp_path, "preview", "--stack", "kms", PULUMI_BACKEND_URL=GOOD["PULUMI_BACKEND_URL"])
    assert "is protected" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("stack, stop", [
    ("marked", 'invalid stack config: 1 problem\n  - kueue-cohorts:trainingRuntime.env.HF_TOKEN = "[secret]"'),
    ("marked-string", "targets the local sandbox, which is not running"),
    ("marked-secret", 'invalid stack config: 1 problem\n  - kueue-cohorts:protected = "[secret]"'),
    ("kms", "targets the local sandbox, which is not running"),
])
def test_a_protected_stack_with_team_settings_passes_the_guard(project, tmp_path, stack, stop):
    """Past the guard these sandbox-mode copies stop at a later step, still before any engine call: the settings
    check (a secret config value is refused: issue 14.6) or the sandbox check (no sandbox running)."""
    proc = _run(project, tmp_path, "preview", "--stack", stack, **GOOD)
    assert "is protected" not in proc.stderr, proc.stderr
    assert stop in proc.stderr, proc.stderr
    assert proc.returncode == (2 if "invalid stack config" in stop else 1), proc.stderr


def test_a_typo_in_the_mark_is_warned_and_the_stack_stays_protected(project, tmp_path):
    proc = _run(project, tmp_path, "preview", "--stack", "marked-typo", **GOOD)
    assert "deploy: warning: kueue-cohorts:protected = 'yes': must be true or false" in proc.stderr


def test_the_dev_stack_keeps_its_file_backend_and_dev_passphrase(project, tmp_path):
    proc = _run(project, tmp_path, "preview", "--stack", "dev")
    assert "is protected" not in proc.stderr
    assert proc.returncode == 1 and "targets the local sandbox" in proc.stderr
