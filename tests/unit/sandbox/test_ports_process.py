"""Free ports and process-group supervision."""

import socket
import sys
import time

from kueue_cohorts.sandbox import ports, process


def test_allocate_gives_distinct_ports_and_keeps_free_previous_ones():
    first = ports.allocate()
    assert len(set(first.values())) == len(ports.PORT_NAMES)
    assert ports.allocate(previous=first) == first


def test_allocate_replaces_a_previous_port_that_is_taken():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        got = ports.allocate(["kube-apiserver"], previous={"kube-apiserver": taken})
        assert got["kube-apiserver"] != taken


def test_stop_kills_the_whole_process_group(tmp_path):
    # A parent that starts a child and ignores SIGTERM: stop must reach the child and escalate to SIGKILL.
    script = (
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(300)\n"
    )
    rec = process.spawn("t", [sys.executable, "-c", script], tmp_path / "t.log")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (tmp_path / "t.log").read_text().strip().splitlines()[-1].isdigit():
        time.sleep(0.05)
    child = int((tmp_path / "t.log").read_text().strip().splitlines()[-1])
    assert process.alive(rec)
    assert process.stop(rec, grace_seconds=1.0) is True
    assert not process.alive(rec)
    assert process.start_ticks(child) is None


def test_a_recycled_pid_is_not_ours(tmp_path):
    rec = process.spawn("t", [sys.executable, "-c", "import time; time.sleep(30)"], tmp_path / "t.log")
    impostor = process.ProcessRecord("t", rec.pid, rec.start_ticks + 1, rec.argv, rec.log)
    assert not process.alive(impostor)
    assert process.stop(impostor) is False
    assert process.alive(rec)
    process.stop(rec)


def test_wait_until_gives_up_at_once_when_the_awaited_process_exited():
    from kueue_cohorts.sandbox.apply import SandboxError, wait_until

    calls = []

    def check():
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionRefusedError("still starting")  # "not yet"
        raise SandboxError("kube-controller-manager exited")

    import pytest

    with pytest.raises(SandboxError, match="exited"):
        wait_until(check, timeout=3600, what="x", interval=0)
    assert len(calls) == 3


def _log_lines(path, prefix):
    return [line for line in path.read_text().splitlines() if line.startswith(prefix)]


def test_a_restarting_component_comes_back_after_each_exit_and_stop_ends_the_loop(tmp_path):
    """`process.restarting`: a command that exits (code 3 here, as a manager whose caches never sync) is started
    again with a doubling back-off, each exit logged with its code; `stop` ends the loop and the command together,
    and nothing starts again after it."""
    log = tmp_path / "manager.log"
    rec = process.spawn("manager", process.restarting(["sh", "-c", "echo run; exit 3"]), log)
    try:
        deadline = time.monotonic() + 30
        while len(_log_lines(log, "run")) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        exits = _log_lines(log, "===")[1:]  # the first line is spawn's own start line
        assert len(_log_lines(log, "run")) >= 3, log.read_text()
        assert [line.split(" ", 2)[2] for line in exits[:2]] == [
            "exited with code 3: restarting in 1 s", "exited with code 3: restarting in 2 s"], log.read_text()
    finally:
        process.stop(rec, grace_seconds=5)
    assert process._group_members(rec.pid) == []
    runs = len(_log_lines(log, "run"))
    time.sleep(2.5)
    assert len(_log_lines(log, "run")) == runs  # stopped for good: no restart after stop


def test_a_restarting_component_that_ran_a_minute_restarts_after_one_second(tmp_path):
    """The back-off falls back to 1 s after a run of 60 s or more (the loop's clock is `date +%s`: a fake `date` on
    PATH makes the second run last 'a minute')."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    counter = tmp_path / "calls"
    fake_date = bin_dir / "date"
    # `date +%s`: 0 for the first two calls (first run: start and end), then 1000 (second run starts at 1000 ...),
    # then 2000 (... and ends at 2000: it ran 1000 s); any other use of date goes to the real one.
    fake_date.write_text(f"""#!/bin/sh
if [ "$1" = "+%s" ]; then
  n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter}
  case $n in 0|1) echo 0;; 2) echo 1000;; *) echo 2000;; esac
else
  exec /bin/date "$@"
fi
""")
    fake_date.chmod(0o755)
    log = tmp_path / "manager.log"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    rec = process.spawn("manager", process.restarting(["sh", "-c", "echo run; exit 1"]), log, env=env)
    try:
        deadline = time.monotonic() + 30
        while len(_log_lines(log, "===")) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        exits = [line.split(" ", 2)[2] for line in _log_lines(log, "===")[1:3]]
    finally:
        process.stop(rec, grace_seconds=5)
    assert exits == ["exited with code 1: restarting in 1 s", "exited with code 1: restarting in 1 s"], \
        log.read_text()


def test_exits_since_start_counts_only_the_current_start(tmp_path):
    """`up` fails fast on a restarting manager that exits before it is healthy: the exits its loop logged after the
    last start line of the (appended) log, none before it."""
    log = tmp_path / "kueue.log"
    assert process.exits_since_start(log) == []
    rec = process.spawn("kueue", process.restarting(["sh", "-c", "exit 2"]), log)
    try:
        deadline = time.monotonic() + 10
        while not process.exits_since_start(log) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [line.split(" ", 2)[2] for line in process.exits_since_start(log)][:1] == [
            "exited with code 2: restarting in 1 s"]
    finally:
        process.stop(rec, grace_seconds=5)
    rec = process.spawn("kueue", process.restarting(["sleep", "30"]), log)  # the next start, same log
    try:
        assert process.exits_since_start(log) == []
    finally:
        process.stop(rec, grace_seconds=5)
