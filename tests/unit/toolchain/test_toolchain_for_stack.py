"""Issue 39 item 4: `make up` builds only what `up` of its stack needs: pulumi and its kubernetes provider, and the
sandbox's binaries when the stack targets the sandbox; never Prometheus or actionlint (toolchain.for_stack, `python
-m kueue_cohorts.toolchain ensure --for-stack STACK`, the Makefile's up/preview/destroy)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts import toolchain
from kueue_cohorts.sandbox.cluster import BINARIES
from kueue_cohorts.toolchain.cli import main as toolchain_main
from tests.helpers import STACKS

REPO = Path(__file__).resolve().parents[3]


def test_the_sandbox_group_is_what_the_sandbox_starts():
    assert toolchain.SANDBOX == tuple(BINARIES)
    assert set(toolchain.ENGINE) | set(toolchain.SANDBOX) <= set(toolchain.all_binaries())
    for never in ("prometheus", "promtool", "actionlint"):
        assert never in toolchain.all_binaries() and never not in toolchain.SANDBOX + toolchain.ENGINE


@pytest.mark.parametrize("stack,sandbox", [("dev", True), ("mixed", True), ("staging", False), ("prod", False)])
def test_each_stack_file_needs_the_engine_and_the_sandbox_only_when_it_targets_it(stack, sandbox):
    assert toolchain.for_stack(STACKS / f"Pulumi.{stack}.yaml") == \
        [*toolchain.ENGINE, *(toolchain.SANDBOX if sandbox else ())]


MODES = st.one_of(st.none(), st.sampled_from(["sandbox", "kubeconfig", "render"]),
                  st.builds(lambda v: {"secure": v}, st.text(min_size=1, max_size=8)))


@settings(max_examples=60, deadline=None)
@given(MODES, st.booleans())
def test_the_mode_decides_and_an_unreadable_one_keeps_the_sandbox(tmp_path_factory, mode, with_cluster):
    """Absent mode, absent cluster key, sandbox, or a `secure:` mode (unreadable here): the sandbox's binaries are
    built; kubeconfig and render need the engine only."""
    config: dict = {"kueue-cohorts:nodePools": []}
    if with_cluster:
        config["kueue-cohorts:cluster"] = {} if mode is None else {"mode": mode}
    path = tmp_path_factory.mktemp("s") / "Pulumi.x.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    needs_sandbox = mode not in ("kubeconfig", "render") or not with_cluster
    assert toolchain.for_stack(path) == [*toolchain.ENGINE, *(toolchain.SANDBOX if needs_sandbox else ())]


def _make_n(target: str, stack: str) -> list[str]:
    """The commands `make -n TARGET STACK=stack` would run (the venv stamp is up to date in a test run)."""
    out = subprocess.run(["make", "-n", target, f"STACK={stack}"], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout
    return [line for line in out.splitlines() if "kueue_cohorts" in line]


@pytest.mark.parametrize("target", ["up", "preview"])
def test_make_up_asks_the_toolchain_for_its_stack_only(target):
    lines = _make_n(target, "staging")
    assert lines[0].endswith("-m kueue_cohorts toolchain ensure --for-stack staging")
    assert not any(line.endswith("toolchain ensure") for line in lines)  # never every binary


def test_make_destroy_needs_the_engine_only():
    assert _make_n("destroy", "dev")[0].endswith("-m kueue_cohorts toolchain ensure pulumi pulumi-resource-kubernetes")


def test_ensure_for_a_missing_stack_file_is_a_usage_error(capsys):
    assert toolchain_main(["ensure", "--for-stack", "no-such-stack"]) == 2
    assert "cannot read the stack file" in capsys.readouterr().err
    # The same through the one command, as the Makefile runs it (the shared flags leave --for-stack to the tool).
    proc = subprocess.run([str(REPO / ".venv" / "bin" / "kueue-cohorts"), "toolchain", "ensure", "--for-stack",
                           "no-such-stack"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2 and "toolchain: cannot read the stack file " in proc.stderr, proc.stderr
