"""``python -m cohorts``: usage and config errors exit 2 with one message, an unreachable cluster exits 1."""
import io
import os
import subprocess
import sys

import pytest
import yaml

from cohorts.cli import main
from sandbox.paths import STATE_DIR_ENV
from tests.helpers import ROOT, STACKS


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out=out, err=err, sleep=lambda s: None)
    return code, out.getvalue(), err.getvalue()


def _stack_file(tmp_path, **cluster):
    doc = yaml.safe_load((STACKS / "Pulumi.dev.yaml").read_text())
    doc["config"]["kueue-cohorts:cluster"] = cluster
    if cluster.get("mode") == "kubeconfig":  # a real cluster's stack names who runs it (issue 28 finding 4)
        doc["config"]["kueue-cohorts:admission"] = {"identities": {"users": ["kueue-cohorts-deployer"]}}
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("command", ["status", "verify"])
def test_a_missing_stack_is_a_config_error(command):
    code, out, err = _run([command, "--stack", "no-such-stack"])
    assert (code, out) == (2, "")
    assert err == f"cohorts: no stack file {STACKS / 'Pulumi.no-such-stack.yaml'} (stacks/Pulumi.<stack>.yaml)\n"


@pytest.mark.parametrize("command", ["status", "verify"])
def test_a_render_mode_stack_has_no_cluster(command, tmp_path):
    code, _, err = _run([command, "--stack-file", str(_stack_file(tmp_path, mode="render", renderDir="out"))])
    assert code == 2
    assert "renders manifests to out (cluster.mode render): there is no cluster to look at" in err


def test_an_invalid_stack_lists_its_problems(tmp_path):
    path = _stack_file(tmp_path, mode="sandbox")
    doc = yaml.safe_load(path.read_text())
    doc["config"]["kueue-cohorts:inferenceTraining"]["inference"]["borrowingLimit"] = {"cpu": "1"}
    path.write_text(yaml.safe_dump(doc))
    code, _, err = _run(["verify", "--stack-file", str(path)])
    assert code == 2
    assert "invalid stack config: 1 problem" in err and "inference.borrowingLimit" in err


def test_a_sandbox_that_is_not_up_is_a_config_error(tmp_path, monkeypatch):
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path))
    code, _, err = _run(["status", "--stack", "dev"])
    assert code == 2
    assert err == f"cohorts: kubeconfig {tmp_path / 'kubeconfig'} does not exist (is the sandbox up? " \
                  "`python -m sandbox up`)\n"


def test_a_kubeconfig_context_that_does_not_exist(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "a",
        "clusters": [{"name": "a", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "a", "user": {"token": "t"}}],
        "contexts": [{"name": "a", "context": {"cluster": "a", "user": "a"}}]}))
    path = _stack_file(tmp_path, mode="kubeconfig", kubeconfig=str(kubeconfig), context="prod-eu")
    code, _, err = _run(["status", "--stack-file", str(path)])
    assert code == 2 and "cannot use kubeconfig" in err and "prod-eu" in err


@pytest.mark.parametrize("command", ["status", "verify"])
def test_an_api_server_that_does_not_answer_is_a_failure_without_traceback(command, tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "a",
        "clusters": [{"name": "a", "cluster": {"server": "http://127.0.0.1:9"}}],  # port 9 (discard): refused
        "users": [{"name": "a", "user": {"token": "t"}}],
        "contexts": [{"name": "a", "context": {"cluster": "a", "user": "a"}}]}))
    path = _stack_file(tmp_path, mode="kubeconfig", kubeconfig=str(kubeconfig))
    proc = subprocess.run([sys.executable, "-m", "cohorts", command, "--stack-file", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("cohorts: ") and "did not answer" in proc.stderr
    assert proc.stderr.count("\n") == 1


@pytest.mark.parametrize("argv", [["status", "--count", "0"], ["status", "--output", "yaml"], ["status", "--interval",
                                  "-1"], ["nothing"], []])
def test_bad_usage_exits_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "usage: python -m cohorts" in capsys.readouterr().err


def test_help_exits_0(capsys):
    for argv in (["--help"], ["status", "--help"], ["verify", "--help"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0
    assert "--watch" in capsys.readouterr().out
