"""Installing a Pulumi plugin from several processes at once (a test run's `toolchain ensure` beside `make
toolchain`) leaves one complete executable and no temp files: each process writes its own temp file and renames it
(toolchain/plugins.py). With one shared temp name, one process renamed away the file another was about to chmod
(FileNotFoundError, seen in a CI run)."""
from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from kueue_cohorts.toolchain import plugins


def _install(args: tuple[str, str, int]) -> str:
    home, source, _ = args
    return str(plugins.install("resource", "demo", "1.2.3", Path(source), Path(home)))


@pytest.mark.parametrize("processes", [2, 4, 8])
def test_concurrent_installs_leave_one_complete_plugin(tmp_path, processes):
    source = tmp_path / "provider"
    payload = os.urandom(4 << 20)  # large enough that copies overlap
    source.write_bytes(payload)
    home = tmp_path / "home"
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        results = pool.map(_install, [(str(home), str(source), i) for i in range(processes * 2)])
    dest = plugins.plugin_path("resource", "demo", "1.2.3", home)
    assert set(results) == {str(dest)}
    assert dest.read_bytes() == payload and os.access(dest, os.X_OK)
    assert sorted(p.name for p in dest.parent.iterdir()) == [dest.name]
