"""Fixtures of the summary tests."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.prsummary.gitrepo import TempRepo


@pytest.fixture
def repo(tmp_path: Path) -> TempRepo:
    """A temporary git repo with a copy of the project, nothing committed yet."""
    return TempRepo(tmp_path / "repo")
