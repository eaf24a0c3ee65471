"""`python -m sandbox status` reports a healthy sandbox with its ClusterQueues, and `python -m sandbox down` stops
every process it started (runs last: it stops the session's sandbox)."""

import os
import subprocess
import sys

from e2e_support import REPO
from sandbox import process
from sandbox.cluster import COMPONENTS
from sandbox.paths import STATE_DIR_ENV


def _cli(sandbox, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, STATE_DIR_ENV: str(sandbox.paths.root)}
    return subprocess.run([sys.executable, "-m", "sandbox", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)


def test_status_then_down_leaves_no_process(sandbox, dev_stack):
    status = _cli(sandbox, "status")
    assert status.returncode == 0, status.stdout + status.stderr
    for component in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kueue",
                      "jobset-controller-manager", "trainer-controller-manager"):
        assert any(line.startswith(component) and " ok " in line for line in status.stdout.splitlines()), status.stdout
    assert "c12-training-cq (cohort c12-shared)" in status.stdout
    assert "nodes: 1/1 Ready" in status.stdout

    records = list(sandbox.state().processes.values())
    assert sorted(r.name for r in records) == sorted(COMPONENTS)
    down = _cli(sandbox, "down")
    assert down.returncode == 0, down.stderr
    assert [r.name for r in records if process.alive(r)] == []
    assert not sandbox.state().processes
    assert _cli(sandbox, "status").returncode == 1
