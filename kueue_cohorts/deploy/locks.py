"""Update locks of the file (diy) backend: who holds them, and whether that process still runs on this host.

The engine (pkg/backend/diy/lock.go @ v3.259.0) writes one JSON file per running update into
``<backend>/.pulumi/locks/<org>/<project>/<stack>/<uuid>.json`` with ``pid``, ``username``, ``hostname`` and
``timestamp`` (RFC 3339), and refuses to start while any exists ("the stack is currently locked by N lock(s)").
``pulumi cancel`` (CancelCurrentUpdate) deletes every lock of the stack, whoever holds it. A process killed with
SIGKILL leaves its lock behind; this module tells such a stale lock from a live one:

- a lock of another host: unknown (we cannot see its processes), never called stale;
- a lock whose pid does not run here: stale;
- a lock whose pid runs but started after the lock was written (the pid was reused): stale;
- otherwise: live (never cleared).
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Optional

from kueue_cohorts.deploy.backend_url import file_backend_dir

LOCKS_DIR = Path(".pulumi") / "locks"
#: Slack between a process's start and the timestamp of the lock it wrote (clock-tick rounding of /proc).
START_SLACK_SECONDS = 2.0


class Holder(str, Enum):
    """Whether the process named by a lock holds it."""

    LIVE = "live"                # the pid runs on this host and is older than the lock
    GONE = "gone"                # no such process on this host, or the pid was reused since
    OTHER_HOST = "other host"    # written on another host: cannot tell


@dataclass(frozen=True)
class Lock:
    """One lock file. path: the file; pid, username, hostname: who wrote it; timestamp: when (aware datetime,
    None if unreadable); holder: LIVE, GONE or OTHER_HOST (see the module doc)."""

    path: Path
    pid: int
    username: str
    hostname: str
    timestamp: Optional[datetime]
    holder: Holder

    def describe(self) -> str:
        """One line: who, where, since when, and whether the process runs."""
        when = self.timestamp.isoformat(timespec="seconds") if self.timestamp else "unknown time"
        state = {Holder.LIVE: "still running", Holder.GONE: "no longer running on this host",
                 Holder.OTHER_HOST: "on another host, cannot tell whether it runs"}[self.holder]
        return f"pid {self.pid} of {self.username}@{self.hostname} since {when} ({state}): {self.path}"


def backend_dir(url: str) -> Optional[Path]:
    """Return the directory the CLI keeps a file backend's state and locks in (None for any other backend): the
    scheme ``file`` in any case, ``~``, relative paths and a query included, as the CLI reads them
    (deploy.backend_url.file_backend_dir)."""
    return file_backend_dir(url)


def stack_lock_dirs(backend: Path, project: str, stack: str) -> list[Path]:
    """Return the lock directories of ``project``/``stack`` under ``backend`` that exist (any organization part:
    ``locks/organization/<project>/<stack>`` in the project layout of the diy backend)."""
    root = backend / LOCKS_DIR
    if not root.is_dir():
        return []
    return sorted(p for p in root.glob(f"**/{project}/{stack}") if p.is_dir())


def _parse_time(text: str) -> Optional[datetime]:
    """Parse Go's RFC 3339 time (nanoseconds, ``Z`` or an offset) into an aware datetime; None if it fails."""
    try:
        text = text.replace("Z", "+00:00")
        if "." in text:  # Python takes at most 6 fractional digits
            head, rest = text.split(".", 1)
            digits = "".join(c for c in rest if c.isdigit())
            text = f"{head}.{digits[:6]}{rest[len(digits):]}"
        parsed = datetime.fromisoformat(text)
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except ValueError:
        return None


def process_start(pid: int) -> Optional[datetime]:
    """Return when process ``pid`` started (from /proc: boot time + starttime ticks), None if it does not run.

    Raises nothing; a process that cannot be inspected (no /proc) but exists is reported as started at the epoch
    (that is, older than any lock: treated as live).
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # exists, another user's
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
            return None  # a zombie (killed, not yet reaped) or dead process holds nothing
        ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22: starttime, in clock ticks since boot
        btime = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                     if line.startswith("btime "))
        return datetime.fromtimestamp(btime + ticks / os.sysconf("SC_CLK_TCK"), tz=UTC)
    except (OSError, ValueError, IndexError, StopIteration):
        return datetime.fromtimestamp(0, tz=UTC)


def holder_of(pid: int, hostname: str, timestamp: Optional[datetime], this_host: Optional[str] = None) -> Holder:
    """Return whether lock holder ``pid``@``hostname`` (lock written at ``timestamp``) runs (see the module doc)."""
    if hostname != (this_host or socket.gethostname()):
        return Holder.OTHER_HOST
    started = process_start(pid)
    if started is None:
        return Holder.GONE
    if timestamp is not None and (started - timestamp).total_seconds() > START_SLACK_SECONDS:
        return Holder.GONE  # the pid was reused by a process younger than the lock
    return Holder.LIVE


def read_locks(backend: Path, project: str, stack: str) -> list[Lock]:
    """Return every lock of ``project``/``stack`` in the file backend at ``backend`` (empty: not locked).

    A lock file that cannot be parsed is reported with pid 0 and holder OTHER_HOST (never treated as stale).
    """
    locks: list[Lock] = []
    for directory in stack_lock_dirs(backend, project, stack):
        for path in sorted(directory.glob("*.json")):
            try:
                content = json.loads(path.read_text())
                pid = int(content["pid"])
                host = str(content.get("hostname", ""))
                when = _parse_time(str(content.get("timestamp", "")))
                locks.append(Lock(path, pid, str(content.get("username", "?")), host, when,
                                  holder_of(pid, host, when)))
            except (OSError, ValueError, KeyError, TypeError):
                locks.append(Lock(path, 0, "?", "?", None, Holder.OTHER_HOST))
    return locks
