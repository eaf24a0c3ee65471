"""How often the real engine writes the stack's state during an `up` through deploy.engine (issue 15).

On a file:// backend deploy.engine sets PULUMI_SKIP_CHECKPOINTS=true: the state is written once, when the update
ends, instead of after every step. Pulumi's own PULUMI_DIY_BACKEND_RETAIN_CHECKPOINTS=true makes the file backend keep a
timestamped copy (``<stack>.json.<unix nanoseconds>``) of every write, which is what these tests count.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kueue_cohorts.deploy import engine
from tests.integration.project import Project

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


def _writes(project: Project, name: str) -> int:
    """Number of state writes the file backend has retained for stack ``name``."""
    stem = project.checkpoint(name).name
    return sum(1 for p in project.checkpoint(name).parent.iterdir() if re.fullmatch(re.escape(stem) + r"\.\d+", p.name))


def _up(project: Project, tmp_path: Path) -> tuple[int, int]:
    """`up` the dev stack rendered offline; return (state writes during the up, resources in the state)."""
    project.make_offline("dev", tmp_path / "rendered")
    stack = engine.open_stack("dev", work_dir=project.root, backend=project.backend,
                              extra_env={"PULUMI_DIY_BACKEND_RETAIN_CHECKPOINTS": "true"})
    before = _writes(project, "dev")
    stack.up(**project.kwargs(stack, policy=False))
    return _writes(project, "dev") - before, len(project.resources(stack))


def test_up_writes_the_state_once(project, tmp_path, monkeypatch):
    monkeypatch.delenv("PULUMI_SKIP_CHECKPOINTS", raising=False)
    writes, resources = _up(project, tmp_path)
    assert resources > 10
    assert writes == 1


def test_callers_setting_restores_a_checkpoint_per_step(project, tmp_path, monkeypatch):
    monkeypatch.setenv("PULUMI_SKIP_CHECKPOINTS", "false")
    writes, resources = _up(project, tmp_path)
    assert writes >= resources  # a create's begin and end are each a write
