"""The command line without a running sandbox: nothing is started for a stack that targets a real cluster, and
status/logs/down on an empty state directory report it instead of failing."""

import pytest

from kueue_cohorts.sandbox import cli
from kueue_cohorts.sandbox.paths import STATE_DIR_ENV


@pytest.fixture
def empty_state(tmp_path, monkeypatch):
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "sbx"))
    return tmp_path / "sbx"


def test_up_only_if_sandbox_skips_a_kubeconfig_stack(empty_state, capsys):
    assert cli.main(["up", "--stack", "staging", "--only-if-sandbox"]) == 0
    assert "no sandbox needed" in capsys.readouterr().out
    assert not empty_state.exists()


def test_status_of_a_sandbox_that_never_ran_is_unhealthy(empty_state, capsys):
    assert cli.main(["status"]) == 1
    out = capsys.readouterr().out
    assert "kube-apiserver" in out and "DOWN (not running)" in out


def test_down_and_logs_without_a_sandbox(empty_state, capsys):
    assert cli.main(["down"]) == 0
    assert "nothing was running" in capsys.readouterr().out
    assert cli.main(["logs", "kueue"]) == 0
    assert "no log" in capsys.readouterr().out
