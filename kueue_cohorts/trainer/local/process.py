"""Run `python -m trainer` as a separate process, the way the container runs it, and watch its stderr.

`start` runs one process; `start_nodes` runs the nodes of one TrainJob, configured only through the PET_* variables
that the Kubeflow Trainer's torch plugin sets. Every run gets `trainer_env`: the recipe of `trainer.local.recipes`
(the demo with its hold points) unless the caller names another in KUEUE_COHORTS_RECIPE.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional, Sequence

from kueue_cohorts import PROJECT_ROOT

ROOT = PROJECT_ROOT


def trainer_env(**overrides: str) -> dict[str, str]:
    """The environment of a trainer run: the repo on PYTHONPATH, the recipe with hold points
    (trainer.local.recipes), one CPU thread (two cores are shared by the whole machine; more threads only contend),
    plus `overrides` (None values remove a variable). Variables of this process named KUEUE_COHORTS_* or PET_* are
    left out."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUEUE_COHORTS_", "PET_"))}
    env.update(
        PYTHONPATH=str(ROOT),
        PYTHONUNBUFFERED="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
        HF_HUB_OFFLINE="1",
        KUEUE_COHORTS_RECIPE="kueue_cohorts.trainer.local.recipes:build_trainer",
    )
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    return env


class TrainerProcess:
    """A running trainer: `lines` collects its stderr; `wait_for(regex)` blocks until a line matches."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], cwd: Optional[Path] = None) -> None:
        self.argv = list(argv)
        self.proc = subprocess.Popen(
            self.argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr or ():  # stderr=PIPE: always set
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for(self, pattern: str, timeout: float = 180) -> re.Match[str]:
        """The first stderr line matching `pattern` (re.search); AssertionError with the log on exit or timeout."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                for line in self.lines[seen:]:
                    match = regex.search(line)
                    if match:
                        return match
                seen = len(self.lines)
                if not self._reader.is_alive() or time.monotonic() > deadline:
                    raise AssertionError(f"no line matching {pattern!r}; log:\n" + self.log())
                self._cond.wait(timeout=0.5)

    def send(self, sig: int = signal.SIGTERM, pid: Optional[int] = None) -> None:
        """Send `sig` to the process (or to `pid`, e.g. the PID 1 inside a PID namespace)."""
        os.kill(pid or self.proc.pid, sig)

    def wait(self, timeout: float = 300) -> int:
        """Exit code after the process ends (and its stderr is drained)."""
        code = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=30)
        return code

    def log(self) -> str:
        return "\n".join(self.lines)

    def ours(self) -> list[str]:
        """The entrypoint's own log lines (prefix `[kueue-cohorts-trainer]`), prefix removed."""
        prefix = "[kueue-cohorts-trainer] "
        return [line[len(prefix):] for line in self.lines if line.startswith(prefix)]


def start(root: Path, run_name: str, **env: str) -> TrainerProcess:
    """Start `python -m trainer --checkpoint-root root --run-name run_name` with trainer_env(**env)."""
    argv = [sys.executable, "-m", "kueue_cohorts.trainer", "--checkpoint-root", str(root), "--run-name", run_name]
    return TrainerProcess(argv, trainer_env(**env), cwd=ROOT)


def run(root: Path, run_name: str, **env: str) -> TrainerProcess:
    """Start and wait; AssertionError with the log unless the exit code is 0."""
    process = start(root, run_name, **env)
    code = process.wait()
    assert code == 0, f"exit code {code}; log:\n{process.log()}"
    return process


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (for MASTER_PORT)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_nodes(root: Path, run_name: str, nodes: int = 2, per_node: Optional[list[dict[str, str]]] = None,
                **env: str) -> list[TrainerProcess]:
    """Start one `python -m trainer` per node of one TrainJob, configured only through the PET_* variables the
    Kubeflow Trainer's torch plugin sets (torch.distributed over gloo on 127.0.0.1). `per_node[i]` adds variables
    to node i only."""
    pet = {"PET_NNODES": str(nodes), "PET_MASTER_ADDR": "127.0.0.1", "PET_MASTER_PORT": str(free_port())}
    return [start(root, run_name, PET_NODE_RANK=str(rank), **pet, **env, **((per_node or [{}] * nodes)[rank]))
            for rank in range(nodes)]


def kill_all(processes: Sequence[TrainerProcess]) -> None:
    """SIGKILL every process still running (cleanup after a test or a benchmark)."""
    for process in processes:
        if process.proc.poll() is None:
            process.proc.kill()
            process.wait()
