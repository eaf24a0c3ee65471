"""Secrets and the training runtime through the real CLI (issue 14.6): `pulumi config set --secret --path` writes a
secret, `python -m kueue_cohorts.deploy` runs the program in the real engine with a file backend, and the secret's
plaintext must
be nowhere: not in the state (`pulumi stack export`, every file of the backend), not in the rendered objects, not in
any message. A secret config value is refused wherever it is; a Secret reference (secretKeyRef) is rendered as the
container's valueFrom.secretKeyRef."""
from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

import pytest
import yaml

from kueue_cohorts import toolchain
from kueue_cohorts.deploy.settings import DEV_PASSPHRASE
from kueue_cohorts.toolchain.paths import pulumi_home
from tests.deploycli import bare_env, clone, deploy

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

STACK = "secretenv"


@pytest.fixture
def setup(tmp_path, engine_binaries):
    """A clone with stack `secretenv` (dev in render mode), created in a file backend of tmp_path with the dev
    passphrase: (project, environment, render dir, pulumi CLI runner)."""
    root = clone(tmp_path / "kueue-cohorts")
    rendered = tmp_path / "rendered"
    doc = yaml.safe_load((root / "stacks" / "Pulumi.dev.yaml").read_text())
    doc["config"]["kueue-cohorts:cluster"] = {"mode": "render", "renderDir": str(rendered)}
    (root / "stacks" / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    (tmp_path / "state").mkdir()
    env = bare_env(tmp_path, PULUMI_CONFIG_PASSPHRASE=DEV_PASSPHRASE, PULUMI_SKIP_UPDATE_CHECK="true",
                   PULUMI_HOME=str(pulumi_home()))

    def pulumi(*args: str) -> subprocess.CompletedProcess:
        proc = subprocess.run([str(toolchain.binary("pulumi")), *args, "--stack", STACK], cwd=root, env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc

    subprocess.run([str(toolchain.binary("pulumi")), "stack", "init", STACK, "--secrets-provider", "passphrase"],
                   cwd=root, env=env, capture_output=True, text=True, timeout=120, check=True)
    return root, env, rendered, pulumi


def _files_holding(text: str, *dirs: Path) -> list[str]:
    """Every file under `dirs` whose bytes contain `text`."""
    found = []
    for directory in dirs:
        for path in directory.rglob("*") if directory.exists() else ():
            if path.is_file() and text.encode() in path.read_bytes():
                found.append(str(path))
    return found


def test_a_secret_config_value_is_refused_wherever_it_is_and_never_shown(setup, tmp_path):
    root, env, rendered, pulumi = setup
    token, zone, description = (f"plain-{secrets.token_hex(8)}" for _ in range(3))
    pulumi("config", "set", "--secret", "--path", "trainingRuntime.env.HF_TOKEN", token)
    pulumi("config", "set", "--secret", "--path", "nodePools[0].labels.zone", zone)
    pulumi("config", "set", "--secret", "--path", "inferenceTraining.training.priorityClass.description",
           description)
    stack_file = (root / "stacks" / f"Pulumi.{STACK}.yaml").read_text()
    assert token not in stack_file and "secure: v1:" in stack_file
    for command in ("preview", "up"):
        proc = deploy(root, command, "--stack", STACK, env=env)
        assert proc.returncode == 2, proc.stdout + proc.stderr  # the settings check of deploy, before the engine
        out = proc.stdout + proc.stderr
        assert "invalid stack config: 3 problems" in proc.stderr, out
        assert 'kueue-cohorts:trainingRuntime.env.HF_TOKEN = "[secret]"' in proc.stderr
        assert "secretKeyRef: {name: <secret>, key: <key>}" in proc.stderr
        assert 'kueue-cohorts:nodePools[0].labels.zone = "[secret]"' in proc.stderr
        assert 'kueue-cohorts:inferenceTraining.training.priorityClass.description = "[secret]"' in proc.stderr
        assert "Traceback" not in out
        for plain in (token, zone, description):
            assert plain not in out
    export = pulumi("stack", "export", "--show-secrets").stdout
    assert "kubernetes:" not in export, "nothing is registered"
    for plain in (token, zone, description):
        assert plain not in export
        assert _files_holding(plain, tmp_path / "state", rendered) == []


def test_a_secret_reference_renders_as_value_from_and_keeps_the_value_out(setup, tmp_path):
    root, env, rendered, pulumi = setup
    token = f"plain-{secrets.token_hex(8)}"
    pulumi("config", "set", "--secret", "--path", "trainingRuntime.env.HF_TOKEN", token)
    refused = deploy(root, "up", "--stack", STACK, env=env)
    assert refused.returncode == 2 and "pulumi config rm --path trainingRuntime.env.HF_TOKEN" in refused.stderr
    # The fix the message gives, through the CLI: drop the secret, reference a Kubernetes Secret instead.
    pulumi("config", "rm", "--path", "trainingRuntime.env.HF_TOKEN")
    pulumi("config", "set", "--path", "trainingRuntime.env.HF_TOKEN.secretKeyRef.name", "hf")
    pulumi("config", "set", "--path", "trainingRuntime.env.HF_TOKEN.secretKeyRef.key", "token")
    pulumi("config", "set", "--path", "trainingRuntime.env.HUB_URL.configMapKeyRef.name", "hub")
    pulumi("config", "set", "--path", "trainingRuntime.env.HUB_URL.configMapKeyRef.key", "url")
    pulumi("config", "set", "--path", "trainingRuntime.env.HUB_URL.configMapKeyRef.optional", "true")
    proc = deploy(root, "up", "--stack", STACK, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    docs = [d for path in sorted(rendered.rglob("*.yaml")) for d in yaml.safe_load_all(path.read_text()) if d]
    runtimes = [d for d in docs if d.get("kind") == "TrainingRuntime"]
    assert runtimes, [d.get("kind") for d in docs]
    for runtime in runtimes:
        pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        env_vars = {e["name"]: e for e in pod["containers"][0]["env"]}
        assert env_vars["HF_TOKEN"] == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf",
                                                                                          "key": "token"}}}
        assert env_vars["HUB_URL"] == {"name": "HUB_URL", "valueFrom": {"configMapKeyRef": {
            "name": "hub", "key": "url", "optional": True}}}
    export = pulumi("stack", "export", "--show-secrets").stdout
    assert "TrainingRuntime" in export and '"secretKeyRef"' in export
    assert token not in export
    assert _files_holding(token, tmp_path / "state", rendered) == []
    assert os.path.isdir(tmp_path / "state" / ".pulumi")
