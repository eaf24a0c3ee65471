"""Where the sandbox state lives."""

from pathlib import Path

from kueue_cohorts.sandbox import paths


def test_explicit_dir_wins_over_xdg_and_home():
    env = {"KUEUE_COHORTS_SANDBOX_DIR": "/tmp/sbx", "XDG_STATE_HOME": "/x", "HOME": "/home/u"}
    assert paths.kubeconfig_path(env) == Path("/tmp/sbx/kubeconfig")


def test_xdg_state_home_then_home():
    assert paths.state_dir({"XDG_STATE_HOME": "/x", "HOME": "/home/u"}) == Path("/x/kueue-cohorts/sandbox")
    assert paths.state_dir({"HOME": "/home/u"}) == Path("/home/u/.local/state/kueue-cohorts/sandbox")


def test_kubeconfig_path_has_no_side_effects(tmp_path):
    target = tmp_path / "never-created"
    assert paths.kubeconfig_path({"KUEUE_COHORTS_SANDBOX_DIR": str(target)}) == target / "kubeconfig"
    assert not target.exists()
