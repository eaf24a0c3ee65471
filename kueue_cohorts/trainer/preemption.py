"""The SIGTERM latch: the kubelet's stop request, remembered until the training loop can act on it.

When Kueue preempts a TrainJob (or a node drains), the kubelet sends SIGTERM to PID 1 of the `node` container, waits
`terminationGracePeriodSeconds`, then sends SIGKILL. The handler installed here only records the request (a signal
handler must not save a checkpoint itself: it can run in the middle of a forward pass, an evaluation or a save);
`trainer.callback.PreemptionCallback` saves at the next step boundary and stops the loop.

Install it first thing in the process: a PID 1 without a handler ignores SIGTERM, and `import torch` alone takes
seconds. Standard library only.
"""
from __future__ import annotations

import logging
import signal
import time
from typing import Iterable, Optional

PREEMPTED_EXIT_CODE = 75
"""The process exit code after a stop signal and its save (sysexits.h EX_TEMPFAIL), never 0: the kubelet makes an
evicted pod whose containers all exited 0 Succeeded and the Job would count the run as complete. The runtime's
podFailurePolicy ignores this code (components/model/runtime.py)."""

log = logging.getLogger("kueue_cohorts.trainer")

_requested_at: Optional[float] = None
_signal_name: Optional[str] = None


def _handle(signum: int, _frame: object) -> None:
    global _requested_at, _signal_name
    if _requested_at is None:
        _requested_at = time.monotonic()
        _signal_name = signal.Signals(signum).name
        # logging from a handler is not reentrant-safe in general; a plain write to stderr is.
        import sys

        sys.stderr.write(
            f"[kueue-cohorts-trainer] {_signal_name} received: saving a checkpoint at the next step boundary\n"
        )
        sys.stderr.flush()


def install(signals: Iterable[signal.Signals] = (signal.SIGTERM, signal.SIGINT)) -> None:
    """Install the latch for `signals` (default SIGTERM and SIGINT). Must be called from the main thread.

    A second signal while a stop is pending is ignored (the save already under way must finish); the kubelet's
    SIGKILL after the grace period cannot be caught, which is why the grace period must cover one step plus one
    save (see components.settings.checkpoint_timing.grace_period_seconds).
    """
    for sig in signals:
        signal.signal(sig, _handle)


def requested() -> bool:
    """True once a stop signal has arrived."""
    return _requested_at is not None


def signal_name() -> Optional[str]:
    """The name of the first stop signal received ("SIGTERM"), or None."""
    return _signal_name


def seconds_since_request() -> Optional[float]:
    """Seconds (monotonic clock) since the first stop signal arrived, or None if none has."""
    return None if _requested_at is None else time.monotonic() - _requested_at


def request(reason: str = "SIGTERM") -> None:
    """Record a stop request without a signal (e.g. from another rank's request in distributed training)."""
    global _requested_at, _signal_name
    if _requested_at is None:
        _requested_at = time.monotonic()
        _signal_name = reason


def reset() -> None:
    """Forget a pending request (for tests that run several trainings in one process)."""
    global _requested_at, _signal_name
    _requested_at = None
    _signal_name = None
