"""Starting and stopping the sandbox's long-running processes, each in its own process group.

A component is started detached from the caller (new session, stdin from /dev/null, stdout and stderr appended to
its log file), so it outlives ``python -m kueue_cohorts.sandbox up``. It is identified by pid *and* kernel start time
(field 22
of ``/proc/<pid>/stat``), so a recycled pid is never mistaken for it, and stopped by signalling its whole process
group: SIGTERM, then SIGKILL after a grace period.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from kueue_cohorts.sandbox import files


@dataclass(frozen=True)
class ProcessRecord:
    """A started component: ``name``, ``pid`` (also its process-group id), ``start_ticks`` (clock ticks after boot
    from /proc; 0 when unknown), ``argv`` and ``log`` (path as str)."""

    name: str
    pid: int
    start_ticks: int
    argv: tuple[str, ...]
    log: str

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict (argv as a list)."""
        data = asdict(self)
        data["argv"] = list(self.argv)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProcessRecord:
        """Inverse of :meth:`to_json`."""
        return cls(data["name"], int(data["pid"]), int(data["start_ticks"]), tuple(data["argv"]), data["log"])


def start_ticks(pid: int) -> int | None:
    """Return the start time of ``pid`` in clock ticks after boot, or None when there is no such process.

    Parses ``/proc/<pid>/stat`` (proc(5): field 22 ``starttime``), skipping the parenthesised command name.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[0] == "Z":  # a zombie has exited; it only waits to be reaped
        return None
    return int(fields[19])


#: `restarting`'s loop: run the command; when it exits, log the exit code and start it again after a back-off that
#: doubles from 1 s to at most 30 s and falls back to 1 s after a run of a minute or more.
_RESTART_LOOP = (
    'delay=1; while :; do started=$(date +%s); "$@"; code=$?; '
    'if [ $(( $(date +%s) - started )) -ge 60 ]; then delay=1; fi; '
    'echo "=== $(date -u +%Y-%m-%dT%H:%M:%SZ) exited with code $code: restarting in $delay s"; '
    'sleep "$delay"; delay=$(( delay * 2 > 30 ? 30 : delay * 2 )); done'
)


def restarting(argv: Sequence[str]) -> list[str]:
    """Return ``argv`` wrapped so that it is started again whenever it exits, as the kubelet restarts a
    Deployment's container (``restartPolicy: Always``, back-off 1 s doubling to 30 s, reset after a minute's run;
    each restart logged with the exit code). A controller manager exits on its own when it cannot sync its caches
    within its timeout, e.g. when its CRDs are deleted and installed again (Kueue's chart, ``kueue.install``): in a
    cluster its pod comes back; in the sandbox this loop brings it back.

    The loop is a ``sh`` process, the group leader ``spawn`` records; the command runs as its child in the same
    process group, so ``stop`` (SIGTERM to the group) ends both, and no restart follows.
    """
    return ["sh", "-c", _RESTART_LOOP, "sh", *argv]


def exits_since_start(log: Path) -> list[str]:
    """Return the lines a `restarting` loop logged ("=== <time> exited with code N: restarting in S s") after the
    last start line `spawn` wrote to ``log``: how often the component exited since it was started (none when the
    log is missing)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return []
    starts = [i for i, line in enumerate(lines) if line.startswith("=== ") and " start: " in line]
    since = lines[starts[-1] + 1:] if starts else lines
    return [line for line in since if line.startswith("=== ") and " exited with code " in line]


def spawn(name: str, argv: Sequence[str], log: Path, *, env: Mapping[str, str] | None = None,
          cwd: Path | None = None) -> ProcessRecord:
    """Start ``argv`` as a detached process-group leader logging to ``log`` (appended); return its record.

    The log's directory and ``cwd`` are created 0700. Raises FileNotFoundError when the executable does not exist.
    """
    files.private_dir(log.parent)
    if cwd:
        files.private_dir(cwd)
    with open(log, "ab", buffering=0) as out:
        out.write(f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%S%z')} start: {' '.join(argv)}\n".encode())
        proc = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None, cwd=cwd, start_new_session=True, close_fds=True,
        )
    return ProcessRecord(name, proc.pid, start_ticks(proc.pid) or 0, tuple(argv), str(log))


def alive(record: ProcessRecord) -> bool:
    """Return True when the process of ``record`` still runs (same pid and same start time)."""
    ticks = start_ticks(record.pid)
    return ticks is not None and (record.start_ticks == 0 or ticks == record.start_ticks)


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def group_alive(record: ProcessRecord) -> bool:
    """Return True when the component of ``record`` still has a process: its leader (same pid and start time) or,
    the leader gone, a live member of its process group (pgid = the leader's pid; a child it started keeps the
    group id, and the kernel does not hand out that pid again while the group exists). False when the pid now
    belongs to an unrelated process (a different start time)."""
    if alive(record):
        return True
    return start_ticks(record.pid) is None and bool(_group_members(record.pid))


def stop(record: ProcessRecord, grace_seconds: float = 10.0) -> bool:
    """Stop the process group of ``record``: SIGTERM, wait up to ``grace_seconds``, then SIGKILL.

    Signals the group also when its leader has exited and other members remain (the kernel keeps a pid in use as
    long as a process group carries it, so such a group is still ours). Does nothing when the recorded process is
    gone and no member of its group remains. Returns True when the group had to be killed with SIGKILL. Never
    signals a group whose leader pid was recycled by another process (a different start time).
    """
    if not alive(record) and not _group_members(record.pid):
        return False
    if start_ticks(record.pid) is not None and not alive(record):
        return False  # pid recycled by an unrelated process: not ours
    try:
        os.killpg(record.pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline:
        _reap(record.pid)
        if not _group_members(record.pid):
            _reap(record.pid, block=True)
            return False
        time.sleep(0.1)
    try:
        os.killpg(record.pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    for _ in range(50):
        _reap(record.pid)
        if not _group_members(record.pid):
            break
        time.sleep(0.1)
    _reap(record.pid, block=True)
    return True


def _reap(pid: int, block: bool = False) -> None:
    """Collect the exit status of ``pid`` if it is our child (when ``up`` and ``down`` run in one process), so
    that no zombie is left behind; ``block`` waits for it (only call once it has been signalled)."""
    try:
        os.waitpid(pid, 0 if block else os.WNOHANG)
    except ChildProcessError:
        pass
