"""Errors first through the deploy CLI and the real engine (issue 20.4): a failing run ends with the program's or
the cluster's own error lines, without Python tracebacks or gRPC plumbing unless --verbose, and exits with 1."""
from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from tests.deploycli import bare_env, clone, deploy

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def project(tmp_path_factory, engine_binaries) -> Path:
    root = clone(tmp_path_factory.mktemp("clone") / "kueue-cohorts")
    for name in ("bad", "stopped"):
        (root / "stacks" / f"Pulumi.{name}.yaml").write_text((root / "stacks" / "Pulumi.dev.yaml").read_text())
    # bad: training priority above inference's, refused by the program's settings check (deploy runs it before the
    # engine; the program again inside it).
    path = root / "stacks" / "Pulumi.bad.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["config"]["kueue-cohorts:cluster"] = {"mode": "render", "renderDir": "rendered"}
    doc["config"]["kueue-cohorts:inferenceTraining"]["training"]["priorityClass"]["value"] = 5000
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


def _stopped_sandbox(tmp_path: Path) -> dict[str, str]:
    """A sandbox state dir whose kubeconfig remains after `sandbox down` (no purge): its API server is gone."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    box = tmp_path / "sandbox"
    box.mkdir()
    (box / "kubeconfig").write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "kueue-cohorts-sandbox",
        "clusters": [{"name": "sandbox", "cluster": {"server": f"https://127.0.0.1:{port}",
                                                     "insecure-skip-tls-verify": True}}],
        "users": [{"name": "admin", "user": {"token": "x"}}],
        "contexts": [{"name": "kueue-cohorts-sandbox", "context": {"cluster": "sandbox", "user": "admin"}}]}))
    return {"KUEUE_COHORTS_SANDBOX_DIR": str(box)}


@pytest.mark.parametrize("command", ["preview", "up"])
def test_a_settings_error_stops_before_the_engine_with_a_usage_exit(project, tmp_path, command):
    """Issue 19 (6): a config error is exit 2 at every entry point. `deploy` runs the program's settings check on
    the stack file before any engine call: the same one message (every problem, key, value, rule, fix), no engine
    output, no traceback, with or without --verbose."""
    for extra in ((), ("--verbose",)):
        proc = deploy(project, command, "--stack", "bad", *extra, env=bare_env(tmp_path))
        assert proc.returncode == 2, proc.stdout + proc.stderr
        out = proc.stdout + proc.stderr
        assert "Traceback" not in out and "grpc" not in out.lower(), out
        lines = proc.stderr.splitlines()
        assert lines[0] == f"deploy: {command} --stack bad: nothing was run: invalid stack config: 1 problem", lines
        assert "priorityClass.value = 5000" in proc.stderr
        assert "pulumi" not in proc.stdout.lower() and "deploy: preview with the policy pack" not in out


def test_an_unreachable_cluster_comes_first_without_traceback(project, tmp_path):
    proc = deploy(project, "preview", "--stack", "stopped", env=bare_env(tmp_path, **_stopped_sandbox(tmp_path)))
    assert proc.returncode == 1
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out and "resource monitor shut down" not in out, out
    lines = proc.stderr.splitlines()
    assert lines[0] == "deploy: pulumi preview --stack stopped failed:"
    assert "Cannot read the API groups of the cluster" in lines[1] and "Connection refused" in proc.stderr
    assert len(lines) <= 8, proc.stderr


def test_a_provider_error_comes_first_and_alone(project, tmp_path):
    """The provider cannot write the render directory: its own messages are the only error lines (the engine's
    `error: update failed` and the resource table are not repeated).

    The engine runs the resource steps in parallel (pulumi's step executor), so how many of the objects reached
    their failed write before the engine stopped depends on scheduling: one line per failed write, at least one,
    each the provider's, none twice (issue 43: one run had three)."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    path = project / "stacks" / "Pulumi.norender.yaml"
    doc = yaml.safe_load((project / "stacks" / "Pulumi.dev.yaml").read_text())
    doc["config"]["kueue-cohorts:cluster"] = {"mode": "render", "renderDir": str(blocker / "rendered")}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    proc = deploy(project, "up", "--stack", "norender", env=bare_env(tmp_path))
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert lines[0] == "deploy: pulumi up --stack norender failed:"
    assert len(lines) >= 2, proc.stderr
    for line in lines[1:]:
        assert line.startswith("  error: failed to write YAML file: ") and str(blocker) in line, proc.stderr
    assert len(set(lines)) == len(lines), proc.stderr
