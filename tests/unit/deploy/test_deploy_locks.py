"""deploy.locks and ``python -m kueue_cohorts.deploy cancel``: a lock of the file backend whose process is gone on this
host is
called stale and can be cleared in one command; a live process's lock, or another host's, never is (issue 20.1).

The lock files here are written in the engine's format (pkg/backend/diy/lock.go @ v3.259.0: pid, username,
hostname, RFC 3339 timestamp with nanoseconds) at the engine's path; tests/integration/test_deploy_interrupted.py
makes real ones by killing the real CLI.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kueue_cohorts.deploy import locks
from tests.deploycli import bare_env, clone, deploy, edit_stack

HOST = socket.gethostname()


def _go_time(when: datetime) -> str:
    """Go's time.Time JSON form: RFC 3339 with nanoseconds and the local offset."""
    return when.astimezone().isoformat(timespec="microseconds")[:-6] + "123" + when.astimezone().isoformat()[-6:]


def write_lock(backend: Path, stack: str, pid: int, host: str = HOST, when: datetime | None = None,
               name: str = "b7c3c7d1-0000-4000-8000-000000000001") -> Path:
    path = backend / ".pulumi" / "locks" / "organization" / "kueue-cohorts" / stack / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"pid": pid, "username": "root", "hostname": host,
                                "timestamp": _go_time(when or datetime.now(UTC))}))
    return path


@pytest.fixture
def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def live_pid():
    proc = subprocess.Popen(["sleep", "300"])
    yield proc.pid
    proc.kill()
    proc.wait()


def test_holder_of_each_kind(dead_pid, live_pid):
    now = datetime.now(UTC)
    assert locks.holder_of(live_pid, HOST, now) is locks.Holder.LIVE
    assert locks.holder_of(dead_pid, HOST, now) is locks.Holder.GONE
    assert locks.holder_of(live_pid, HOST + "-elsewhere", now) is locks.Holder.OTHER_HOST
    assert locks.holder_of(dead_pid, HOST + "-elsewhere", now) is locks.Holder.OTHER_HOST
    # The pid runs, but started an hour after the lock was written: the pid was reused, the lock is stale.
    assert locks.holder_of(live_pid, HOST, now - timedelta(hours=1)) is locks.Holder.GONE
    assert locks.holder_of(os.getpid(), HOST, None) is locks.Holder.LIVE


def test_read_locks_parses_the_engines_format(tmp_path, dead_pid, live_pid):
    write_lock(tmp_path, "dev", dead_pid, name="a")
    write_lock(tmp_path, "dev", live_pid, name="b")
    write_lock(tmp_path, "other", dead_pid, name="c")
    (tmp_path / ".pulumi" / "locks" / "organization" / "kueue-cohorts" / "dev" / "d.json").write_text("{not json")
    found = {lock.path.stem: lock for lock in locks.read_locks(tmp_path, "kueue-cohorts", "dev")}
    assert set(found) == {"a", "b", "d"}
    assert found["a"].holder is locks.Holder.GONE and found["a"].pid == dead_pid
    assert found["b"].holder is locks.Holder.LIVE and found["b"].timestamp is not None
    assert found["d"].holder is locks.Holder.OTHER_HOST  # unreadable: never called stale
    assert locks.read_locks(tmp_path / "nothing", "kueue-cohorts", "dev") == []


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = clone(tmp_path_factory.mktemp("clone") / "kueue-cohorts")
    edit_stack(root, "dev", {"cluster": {"mode": "render", "renderDir": "rendered"}})  # no sandbox needed
    return root


def _deploy(project: Path, tmp_path: Path, *args: str):
    env = bare_env(tmp_path, KUEUE_COHORTS_CACHE=str(tmp_path / "empty-cache"))
    proc = deploy(project, *args, env=env, timeout=120)
    assert "Traceback" not in proc.stdout + proc.stderr
    return proc


@pytest.mark.parametrize("command", ["up", "preview", "refresh", "destroy"])
def test_a_stale_lock_is_reported_with_the_one_command_that_clears_it(project, tmp_path, dead_pid, command):
    lock = write_lock(tmp_path / "state", "dev", dead_pid)
    proc = _deploy(project, tmp_path, command, "--stack", "dev")
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert lines[0] == "deploy: stack 'dev' is locked by 1 earlier run(s):"
    assert f"pid {dead_pid} of root@{HOST}" in lines[1] and "no longer running on this host" in lines[1]
    assert "`kueue-cohorts cancel --stack dev` clears the lock" in lines[2]
    assert lock.exists()


def test_cancel_clears_a_stale_lock_then_the_stack_is_free(project, tmp_path, dead_pid):
    lock = write_lock(tmp_path / "state", "dev", dead_pid)
    proc = _deploy(project, tmp_path, "cancel", "--stack", "dev")
    assert proc.returncode == 0, proc.stderr
    assert f"cleared the stale lock of pid {dead_pid}" in proc.stdout
    assert not lock.exists()
    again = _deploy(project, tmp_path, "cancel", "--stack", "dev")
    assert again.returncode == 0 and "is not locked" in again.stdout


def test_cancel_never_clears_a_live_process_lock(project, tmp_path, dead_pid, live_pid):
    stale = write_lock(tmp_path / "state", "dev", dead_pid, name="stale")
    live = write_lock(tmp_path / "state", "dev", live_pid, name="live")
    proc = _deploy(project, tmp_path, "cancel", "--stack", "dev")
    assert proc.returncode == 1
    assert f"pid {live_pid}" in proc.stderr and "still running" in proc.stderr
    assert live.exists() and stale.exists()  # nothing is cleared while a holder may run
    up = _deploy(project, tmp_path, "up", "--stack", "dev")
    assert up.returncode == 1 and "another run of this stack is in progress" in up.stderr


def test_cancel_never_clears_another_hosts_lock(project, tmp_path, dead_pid):
    lock = write_lock(tmp_path / "state", "dev", dead_pid, host="ci-runner-7")
    proc = _deploy(project, tmp_path, "cancel", "--stack", "dev")
    assert proc.returncode == 1 and "on another host" in proc.stderr and lock.exists()
    up = _deploy(project, tmp_path, "up", "--stack", "dev")
    assert up.returncode == 1 and "`pulumi cancel --stack dev` (the engine's own advice)" in up.stderr


def test_cancel_on_another_backend_prints_the_engines_advice(project, tmp_path):
    env = bare_env(tmp_path, KUEUE_COHORTS_CACHE=str(tmp_path / "empty-cache"),
                   PULUMI_BACKEND_URL="s3://team-bucket/kueue-cohorts")
    proc = deploy(project, "cancel", "--stack", "dev", env=env, timeout=120)
    assert proc.returncode == 1
    assert "s3://team-bucket/kueue-cohorts" in proc.stderr and "`pulumi cancel --stack dev`" in proc.stderr


def test_a_killed_process_not_yet_reaped_holds_no_lock():
    """A SIGKILLed engine whose parent died too stays a zombie until init reaps it: it holds nothing."""
    import os
    import signal
    import subprocess
    import time

    from kueue_cohorts.deploy.locks import process_start

    child = subprocess.Popen(["sleep", "30"])
    os.kill(child.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and process_start(child.pid) is not None:
        time.sleep(0.05)
    assert process_start(child.pid) is None  # a zombie until child.wait() below
    child.wait()
    assert process_start(os.getpid()) is not None
