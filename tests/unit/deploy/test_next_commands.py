"""`make up` ends by printing the next three commands (issue 39 item 3): on the sandbox, point kubectl at it, look at
the cohorts, start the round trip of docs/operations.md; on a kubeconfig cluster, verify, status, monitoring. Every
printed `kueue-cohorts` line parses through the real parser, the round trip's file exists, and the three are the
docs' own round-trip lines."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from kueue_cohorts import cli
from kueue_cohorts.deploy import stackfile
from kueue_cohorts.deploy.cli import ROUND_TRIP, next_commands
from tests.docs_commands import section_commands

ROOT = Path(__file__).resolve().parents[3]


def _target(name: str) -> stackfile.StackTarget:
    return stackfile.read(name, ROOT / "stacks" / f"Pulumi.{name}.yaml")


def test_after_up_on_the_sandbox_the_round_trip_comes_next(tmp_path):
    lines = next_commands(_target("dev"), {"KUEUE_COHORTS_SANDBOX_DIR": str(tmp_path)})
    assert lines == [f"export KUBECONFIG={tmp_path / 'kubeconfig'}", "kueue-cohorts status --stack dev",
                     f"kubectl apply -f {ROUND_TRIP}   # the round trip: docs/operations.md, \"Round trip\""]
    assert (ROOT / ROUND_TRIP).is_file()
    docs = [d.text for d in section_commands(ROOT / "docs" / "operations.md", "## Round trip")]
    assert lines[1] in docs and lines[2].split("   #")[0] in docs


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_after_up_on_a_cluster_verify_comes_next(stack):
    lines = next_commands(_target(stack), {})
    assert [shlex.split(line, comments=True)[:2] for line in lines] == [["kueue-cohorts", "verify"],
                                                                        ["kueue-cohorts", "status"],
                                                                        ["kueue-cohorts", "monitoring"]]
    for line in lines:
        cli.parser().parse_args(shlex.split(line, comments=True)[1:])
