"""Free ports and process-group supervision."""

import socket
import sys
import time

from sandbox import ports, process


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
    from sandbox.apply import SandboxError, wait_until

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
