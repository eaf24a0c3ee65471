"""``python -m kueue_cohorts.cohorts``: usage and config errors exit 2 with one message, an unreachable cluster
exits 1."""
import io
import json
import os
import subprocess
import sys
from datetime import UTC, datetime

import pytest
import yaml

from kueue_cohorts.cohorts.cli import main, watch_verify
from kueue_cohorts.cohorts.verify import Difference
from kueue_cohorts.sandbox.paths import STATE_DIR_ENV
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
                  "`kueue-cohorts sandbox up`)\n"


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
    proc = subprocess.run([sys.executable, "-m", "kueue_cohorts.cohorts", command, "--stack-file", str(path)], cwd=ROOT,
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
    assert "usage: python -m kueue_cohorts.cohorts" in capsys.readouterr().err


def test_help_exits_0(capsys):
    for argv in (["--help"], ["status", "--help"], ["verify", "--help"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0
    assert "--watch" in capsys.readouterr().out


def _diff(name):
    return Difference("ClusterQueue", name, "", "spec.cohortName", None, "c12-shared",
                      "cohort-membership: only the stack ... (not declared by the stack)", fix="declare it")


@pytest.mark.parametrize("output", ["table", "json"])
def test_verify_watch_reports_each_finding_as_it_appears_and_goes(output):
    rounds = iter([[], [_diff("sneaky-cq")], [_diff("sneaky-cq"), _diff("other")], [_diff("other")]])
    clock = iter(datetime(2026, 12, 1, 12, 0, s, tzinfo=UTC) for s in range(10))
    out, slept = io.StringIO(), []
    code = watch_verify(lambda: next(rounds), out, slept.append, 2.5, count=4, output=output,
                        clock=lambda: next(clock))
    lines = out.getvalue().splitlines()
    assert code == 1 and slept == [2.5] * 3
    if output == "json":
        events = [json.loads(line) for line in lines]
        assert [(e["time"], e["event"], e["difference"]["name"]) for e in events] == [
            ("2026-12-01T12:00:01Z", "found", "sneaky-cq"), ("2026-12-01T12:00:02Z", "found", "other"),
            ("2026-12-01T12:00:03Z", "resolved", "sneaky-cq")]
    else:
        assert lines[0] == "2026-12-01T12:00:00Z the cluster matches the stack and keeps its promises"
        assert lines[1].startswith("2026-12-01T12:00:01Z + ClusterQueue sneaky-cq at spec.cohortName: "
                                   "cohort-membership:")
        assert lines[2].startswith("2026-12-01T12:00:02Z + ClusterQueue other")
        assert lines[3].startswith("2026-12-01T12:00:03Z - resolved: ClusterQueue sneaky-cq")
        assert len(lines) == 4


def test_verify_watch_exits_0_when_the_last_check_is_clean_and_on_ctrl_c():
    rounds = iter([[_diff("x")], []])
    assert watch_verify(lambda: next(rounds), io.StringIO(), lambda s: None, 1, count=2) == 0

    def interrupted():
        raise KeyboardInterrupt

    assert watch_verify(interrupted, io.StringIO(), lambda s: None, 1) == 0


def test_verify_help_names_watch_and_leak_grace(capsys):
    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    text = capsys.readouterr().out
    assert "--watch" in text and "--leak-grace" in text and "leaked" in text
