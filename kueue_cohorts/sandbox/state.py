"""The record of a running sandbox (``state.json``): ports, processes, stack, binaries."""

from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from kueue_cohorts.components.settings import ManagerTrainer
from kueue_cohorts.sandbox import files
from kueue_cohorts.sandbox.process import ProcessRecord


@dataclass
class State:
    """Mutable record written after every change: ``ports`` {name: port}, ``processes`` {component: record} in start
    order, ``stack`` (the stack file whose nodePools made the nodes), ``versions`` {binary: version string},
    ``manager_trainer`` (what serves the TrainJob API here, from the stack's ``multiKueue.managerTrainer``:
    Controller, or CRDsOnly when the Trainer's controller and webhook configurations are not run; a state written
    before the field existed reads as Controller)."""

    ports: dict[str, int] = field(default_factory=dict)
    processes: dict[str, ProcessRecord] = field(default_factory=dict)
    stack: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    manager_trainer: ManagerTrainer = ManagerTrainer.CONTROLLER

    @classmethod
    def load(cls, path: Path) -> State:
        """Read ``path``; a missing file gives an empty state. Raises ValueError on a corrupt file (an unknown
        ``manager_trainer`` included)."""
        if not path.exists():
            return cls()
        data = json.loads(path.read_text())
        return cls(
            ports={k: int(v) for k, v in data.get("ports", {}).items()},
            processes={k: ProcessRecord.from_json(v) for k, v in data.get("processes", {}).items()},
            stack=data.get("stack", ""),
            versions=dict(data.get("versions", {})),
            manager_trainer=ManagerTrainer(data.get("manager_trainer", ManagerTrainer.CONTROLLER.value)),
        )

    def save(self, path: Path) -> None:
        """Write the state atomically (temp file + rename); a missing directory is created 0700."""
        if not path.parent.exists():
            files.private_dir(path.parent)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # one per process: two writers may race
        tmp.write_text(json.dumps({
            "ports": self.ports,
            "processes": {k: v.to_json() for k, v in self.processes.items()},
            "stack": self.stack,
            "versions": self.versions,
            "manager_trainer": self.manager_trainer.value,
        }, indent=2) + "\n")
        tmp.replace(path)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` for the block, so two ``up``/``down`` never interleave. The
    directory of ``path`` (the sandbox's state directory) is created 0700, or narrowed to 0700."""
    files.private_dir(path.parent)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
