"""Fixtures for the integration suite: the real pulumi CLI on a temporary copy of the project.

Every test works on a copy of Pulumi.yaml and stacks/ in its own tmp dir with its own ``file://`` backend, so
nothing under stacks/ is ever written and the user's state is never touched. The program that runs is the
repo's own __main__.py (inline, through deploy.engine), and the policy pack is the repo's policy/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kueue_cohorts import toolchain
from tests.integration.project import Project


@pytest.fixture(scope="session")
def engine_binaries() -> dict[str, Path]:
    """Build (if missing) and return the pulumi CLI and the kubernetes provider plugin; a failure fails the test."""
    return toolchain.ensure(["pulumi", "pulumi-resource-kubernetes"])


@pytest.fixture
def project(tmp_path: Path, engine_binaries) -> Project:
    """A fresh temporary project copy with its own backend (the toolchain is built first)."""
    return Project(tmp_path)
