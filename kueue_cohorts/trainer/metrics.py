"""The trainer's own facts in Prometheus' text format, where Kueue cannot see them (issue 31 item 1).

Kueue knows that a TrainJob was preempted; only the trainer knows how old its newest checkpoint is, how many steps a
preemption cost and how long a checkpoint took to reach the disk. Exported with the official client library
(prometheus-client, pinned in requirements-trainer.txt) on ``KUEUE_COHORTS_METRICS_PORT`` (``--metrics-port``;
unset: no endpoint), one endpoint per training process, scraped by a PodMonitor (the pod's namespace and name come
from the scrape, so the series carry no labels of their own):

- ``kueue_cohorts_trainer_global_step`` (gauge): the optimizer step the run has reached;
- ``kueue_cohorts_trainer_checkpoint_step`` (gauge): the global step of the newest checkpoint this attempt wrote or
  resumed from (-1: none);
- ``kueue_cohorts_trainer_last_checkpoint_timestamp_seconds`` (gauge): Unix time of this attempt's last save (0: none);
- ``kueue_cohorts_trainer_checkpoint_age_seconds`` (gauge): seconds of training not covered by a checkpoint: now
  minus the later of the attempt's start and its last save;
- ``kueue_cohorts_trainer_steps_lost_at_last_preemption`` (gauge): steps the previous attempt reached beyond the
  checkpoint this one resumed from;
- ``kueue_cohorts_trainer_checkpoint_flush_seconds`` (histogram): seconds per save spent in fsync
  (trainer.checkpoints.fsync_tree).

Steps lost come from a progress marker (:data:`PROGRESS_FILE` in the run directory), rewritten by world rank 0 with
the global step reached after every step (``progress_interval`` seconds apart at most, default 0: every step; one
small file renamed over the old one): the next attempt compares it with the step it resumes from. A graceful stop
saves at the step it reached, so it loses 0; a SIGKILL loses the steps the marker counted since the last save.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable, Optional

from prometheus_client import CollectorRegistry, Gauge, Histogram, start_http_server

PREFIX = "kueue_cohorts_trainer"
PROGRESS_FILE = ".kueue-cohorts-progress.json"
"""The progress marker in the run directory: {"global_step": int, "time": Unix seconds}."""
FLUSH_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
"""Histogram buckets of the flush time in seconds: a small model on a local disk flushes in milliseconds, a large
sharded one on NFS or CephFS in tens of seconds."""


def read_progress(run_dir: Path) -> Optional[int]:
    """The global step the progress marker of ``run_dir`` records, or None when there is none or it is unreadable
    (a marker cut short by a kill is ignored, never an error)."""
    try:
        step = json.loads((run_dir / PROGRESS_FILE).read_text())["global_step"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return step if isinstance(step, int) and not isinstance(step, bool) and step >= 0 else None


def write_progress(run_dir: Path, step: int, now: float) -> None:
    """Record ``step`` (global step reached) at Unix time ``now`` in the progress marker of ``run_dir``, atomically
    (a temporary file renamed over it). Raises OSError when the run directory cannot be written."""
    tmp = run_dir / f"{PROGRESS_FILE}.tmp"
    tmp.write_text(json.dumps({"global_step": step, "time": now}))
    os.replace(tmp, run_dir / PROGRESS_FILE)


def steps_lost(progress_step: Optional[int], resumed_step: Optional[int]) -> int:
    """Steps a previous attempt reached beyond the checkpoint this attempt resumes from: progress - resumed (a run
    without a checkpoint resumes from 0), never below 0; 0 without a marker (a first attempt)."""
    if progress_step is None:
        return 0
    return max(progress_step - (resumed_step or 0), 0)


class TrainerMetrics:
    """The trainer's metrics in their own registry (nothing of the process collector's): see the module table.

    Args:
        run_dir: the run's directory (progress marker). clock: Unix time in seconds (time.time). progress_interval:
        the shortest time in seconds between two writes of the progress marker (default 0: after every step).
    """

    def __init__(self, run_dir: Path, clock: Callable[[], float] = time.time, progress_interval: float = 0.0):
        self.run_dir = Path(run_dir)
        self.registry = CollectorRegistry()
        self._clock = clock
        self._started = clock()
        self._last_save: Optional[float] = None
        self._progress_interval = progress_interval
        self._progress_written = float("-inf")
        self.global_step = Gauge(f"{PREFIX}_global_step", "The optimizer step the run has reached.",
                                 registry=self.registry)
        self.checkpoint_step = Gauge(
            f"{PREFIX}_checkpoint_step",
            "The global step of the newest checkpoint this attempt wrote or resumed from (-1: none).",
            registry=self.registry)
        self.checkpoint_step.set(-1)
        self.last_checkpoint = Gauge(f"{PREFIX}_last_checkpoint_timestamp_seconds",
                                     "Unix time of this attempt's last checkpoint save (0: none yet).",
                                     registry=self.registry)
        age = Gauge(f"{PREFIX}_checkpoint_age_seconds",
                    "Seconds of training not covered by a checkpoint: now minus the later of the attempt's start and "
                    "its last save.", registry=self.registry)
        age.set_function(self.checkpoint_age)
        self.steps_lost = Gauge(f"{PREFIX}_steps_lost_at_last_preemption",
                                "Steps the previous attempt reached beyond the checkpoint this attempt resumed from.",
                                registry=self.registry)
        self.flush_seconds = Histogram(f"{PREFIX}_checkpoint_flush_seconds",
                                       "Seconds per checkpoint save spent flushing its files to disk (fsync).",
                                       buckets=FLUSH_BUCKETS, registry=self.registry)

    def checkpoint_age(self) -> float:
        """Seconds since the later of the attempt's start and its last save (clock seconds, >= 0)."""
        since = self._started if self._last_save is None else max(self._started, self._last_save)
        return max(self._clock() - since, 0.0)

    def resumed(self, resumed_step: Optional[int]) -> int:
        """Record the start of an attempt from checkpoint ``resumed_step`` (None: from scratch): sets steps lost from
        the progress marker and the checkpoint and global steps. Returns the steps lost."""
        lost = steps_lost(read_progress(self.run_dir), resumed_step)
        self.steps_lost.set(lost)
        self.global_step.set(resumed_step or 0)
        self.checkpoint_step.set(-1 if resumed_step is None else resumed_step)
        return lost

    def step(self, global_step: int, world_process_zero: bool = True) -> None:
        """Record the global step reached; world rank 0 rewrites the progress marker at most once per
        ``progress_interval`` seconds."""
        self.global_step.set(global_step)
        now = self._clock()
        if world_process_zero and now - self._progress_written >= self._progress_interval:
            write_progress(self.run_dir, global_step, now)
            self._progress_written = now

    def saved(self, global_step: int, flush_seconds: float, world_process_zero: bool = True) -> None:
        """Record a complete save at ``global_step`` whose flush took ``flush_seconds``; world rank 0 writes the
        progress marker at once (a save always covers the step it saves)."""
        now = self._clock()
        self._last_save = now
        self.last_checkpoint.set(now)
        self.checkpoint_step.set(global_step)
        self.flush_seconds.observe(flush_seconds)
        self.global_step.set(global_step)
        if world_process_zero:
            write_progress(self.run_dir, global_step, now)
            self._progress_written = now

    def serve(self, port: int, address: str = "0.0.0.0") -> int:
        """Serve the registry on ``http://<address>:<port>/metrics`` from a daemon thread (prometheus_client
        start_http_server); port 0 picks a free port. Returns the port served. Raises OSError when it is taken."""
        server, _thread = start_http_server(port, addr=address, registry=self.registry)
        return int(server.server_port)
