"""Issue 29 item 3 through the real pulumi CLI: a stack file copied from dev carries dev's encryption salt, so a team
passphrase fails with "incorrect passphrase"; `kueue-cohorts init` writes one without it, and the engine makes the
new stack's own salt on first use."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from kueue_cohorts import toolchain
from kueue_cohorts.toolchain.paths import pulumi_home
from tests.deploycli import bare_env, clone

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def _pulumi(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(toolchain.binary("pulumi")), *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def pulumi_cli() -> Path:
    """The pinned pulumi CLI (built if missing); no provider plugin is needed to set config."""
    return toolchain.ensure(["pulumi"])["pulumi"]


def test_a_stack_made_by_init_takes_a_secret_with_its_own_passphrase(tmp_path, pulumi_cli):
    root = clone(tmp_path / "kueue-cohorts")
    (tmp_path / "state").mkdir()
    env = bare_env(tmp_path, PULUMI_CONFIG_PASSPHRASE="the team's own passphrase", PULUMI_SKIP_UPDATE_CHECK="true",
                   PULUMI_HOME=str(pulumi_home()))
    dev_salt = yaml.safe_load((root / "stacks" / "Pulumi.dev.yaml").read_text())["encryptionsalt"]

    # What users did before: copy dev's file. The engine finds dev's salt and refuses the team's passphrase.
    (root / "stacks" / "Pulumi.copied.yaml").write_text((root / "stacks" / "Pulumi.dev.yaml").read_text())
    copied = _pulumi(root, env, "stack", "init", "copied")
    assert copied.returncode != 0 and "incorrect passphrase" in copied.stdout + copied.stderr, copied

    made = subprocess.run([str(root / ".venv" / "bin" / "python"), "-m", "kueue_cohorts", "init", "--stack", "lab",
                           "--from", "dev"], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    assert _pulumi(root, env, "stack", "init", "lab").returncode == 0
    done = _pulumi(root, env, "config", "set", "--secret", "probe", "x", "--stack", "lab")
    assert done.returncode == 0, done.stdout + done.stderr
    salt = yaml.safe_load((root / "stacks" / "Pulumi.lab.yaml").read_text())["encryptionsalt"]
    assert salt.startswith("v1:") and salt != dev_salt
    shown = _pulumi(root, env, "config", "get", "probe", "--stack", "lab")
    assert shown.returncode == 0 and shown.stdout.strip() == "x"
