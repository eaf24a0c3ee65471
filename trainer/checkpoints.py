"""Checkpoint discovery, completeness and rotation for one run's directory (standard library only).

Layout (Hugging Face Trainer, `transformers.trainer.Trainer._save_checkpoint`): a run's checkpoints live in
`<checkpoint root>/<TrainJob name>/checkpoint-<global step>/`. Only directories named exactly `checkpoint-<int>`
count, ordered by that integer. A checkpoint is complete only when every file the Trainer writes for it is there:

- `trainer_state.json`, valid JSON whose `global_step` equals the directory's number (written last by the Trainer);
- `training_args.bin` (non-empty);
- the weights: `model.safetensors` | `pytorch_model.bin` | `adapter_model.safetensors` | `adapter_model.bin`, or a
  sharded `model.safetensors.index.json` / `pytorch_model.bin.index.json` whose every shard exists; no weight file
  may be zero-length;
- unless the run saves only the model (`TrainingArguments.save_only_model`): `optimizer.pt`, `scheduler.pt` and at
  least one `rng_state*.pth`, all non-empty.

Incomplete checkpoints are reported and skipped, never deleted: they may be the only evidence of what went wrong.
This module is shipped into the training container (ConfigMap), so it imports nothing outside the standard library.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

CHECKPOINT_NAME = re.compile(r"^checkpoint-([0-9]+)$")
TRAINER_STATE = "trainer_state.json"
TRAINING_ARGS = "training_args.bin"
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "adapter_model.safetensors", "adapter_model.bin")
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
OPTIMIZER = "optimizer.pt"
SCHEDULER = "scheduler.pt"
RNG_STATE_GLOB = "rng_state*.pth"
_RUN_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")

log = logging.getLogger("kueue_cohorts.trainer")


@dataclass(frozen=True, order=True)
class Checkpoint:
    """One `checkpoint-<step>` directory: `step` (int, the Trainer's global_step) and its `path`."""

    step: int
    path: Path


def run_dir(root: os.PathLike | str, run_name: str) -> Path:
    """The run-scoped checkpoint directory `<root>/<run_name>`.

    Args:
        root: the checkpoint root (the RWX PVC's mount path, e.g. /mnt/checkpoints).
        run_name: the TrainJob name (an RFC 1035 label); one path component, no '/' and not '.' or '..'.
    Returns:
        The directory path (not created).
    Raises:
        ValueError: run_name is empty or not a single safe path component.
    """
    if not run_name or not _RUN_NAME.match(run_name) or run_name in (".", ".."):
        raise ValueError(
            f"run name {run_name!r} must be one path component of letters, digits, '-', '_' or '.' "
            "(the TrainJob name); set KUEUE_COHORTS_RUN_NAME"
        )
    return Path(root) / run_name


def list_checkpoints(directory: os.PathLike | str) -> list[Checkpoint]:
    """Every directory named exactly `checkpoint-<int>` in `directory`, oldest (lowest step) first.

    Other names (`checkpoint-12abc`, `checkpoint-12.tmp`, files, another run's directories) are ignored. A missing
    directory yields []. Steps compare as integers (checkpoint-100 is newer than checkpoint-99).
    """
    base = Path(directory)
    if not base.is_dir():
        return []
    found = []
    for entry in base.iterdir():
        match = CHECKPOINT_NAME.match(entry.name)
        if match and entry.is_dir():
            found.append(Checkpoint(int(match.group(1)), entry))
    return sorted(found)


def _non_empty(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size > 0
    except OSError:
        return False


def _weight_problems(path: Path) -> list[str]:
    problems = []
    present = [name for name in WEIGHT_FILES if (path / name).exists()]
    for name in present:
        if not _non_empty(path / name):
            problems.append(f"{name} is empty")
    indexes = [name for name in WEIGHT_INDEXES if (path / name).exists()]
    for name in indexes:
        try:
            shards = set(json.loads((path / name).read_text())["weight_map"].values())
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            problems.append(f"{name} is not a valid weight index")
            continue
        for shard in sorted(shards):
            if not _non_empty(path / shard):
                problems.append(f"weight shard {shard} is missing or empty")
    if not present and not indexes:
        problems.append("no model weights (" + ", ".join(WEIGHT_FILES + WEIGHT_INDEXES) + ")")
    return problems


def completeness_problems(checkpoint: Checkpoint, with_optimizer: bool = True) -> list[str]:
    """What is missing or broken in a checkpoint; [] means complete.

    Args:
        checkpoint: the directory to check.
        with_optimizer: False when the run saves only the model (`save_only_model=True`): then optimizer,
            scheduler and RNG state are not required.
    Returns:
        Human-readable problems, e.g. ["trainer_state.json is missing", "optimizer.pt is missing or empty"].
    """
    path = checkpoint.path
    problems = []
    state_path = path / TRAINER_STATE
    if not state_path.is_file():
        problems.append(f"{TRAINER_STATE} is missing")
    else:
        try:
            step = json.loads(state_path.read_text())["global_step"]
            if step != checkpoint.step:
                problems.append(f"{TRAINER_STATE} says global_step {step}, the directory says {checkpoint.step}")
        except (OSError, ValueError, KeyError, TypeError):
            problems.append(f"{TRAINER_STATE} is not valid trainer state JSON")
    if not _non_empty(path / TRAINING_ARGS):
        problems.append(f"{TRAINING_ARGS} is missing or empty")
    problems += _weight_problems(path)
    if with_optimizer:
        for name in (OPTIMIZER, SCHEDULER):
            if not _non_empty(path / name):
                problems.append(f"{name} is missing or empty")
        rng = list(path.glob(RNG_STATE_GLOB))
        if not rng or not all(_non_empty(item) for item in rng):
            problems.append("rng_state*.pth is missing or empty")
    return problems


def is_complete(checkpoint: Checkpoint, with_optimizer: bool = True) -> bool:
    """True when `completeness_problems(checkpoint, with_optimizer)` is empty."""
    return not completeness_problems(checkpoint, with_optimizer)


def newest_complete(directory: os.PathLike | str, with_optimizer: bool = True) -> Optional[Checkpoint]:
    """The newest complete checkpoint of a run directory, or None when there is none.

    Every newer incomplete checkpoint is logged (warning, with its problems) and skipped; nothing is deleted.
    """
    for checkpoint in reversed(list_checkpoints(directory)):
        problems = completeness_problems(checkpoint, with_optimizer)
        if not problems:
            return checkpoint
        log.warning(
            "skipping incomplete checkpoint %s (kept, not deleted): %s", checkpoint.path, "; ".join(problems)
        )
    return None


def rotate(
    directory: os.PathLike | str,
    save_total_limit: Optional[int],
    protected: Iterable[os.PathLike | str] = (),
    with_optimizer: bool = True,
) -> list[Path]:
    """Delete the oldest complete checkpoints beyond `save_total_limit`, as the Trainer's rotation would, but safely.

    Differences from `transformers.trainer_utils.rotate_checkpoints` (which we switch off): only complete
    checkpoints count and are ever deleted (incomplete ones are kept for inspection); ordering is by step, never
    by mtime; and `protected` paths (the checkpoint just written, the one this attempt resumed from) are never
    deleted, even if that keeps more than the limit.

    Args:
        directory: the run directory.
        save_total_limit: the recipe's `TrainingArguments.save_total_limit`; None or <= 0 keeps everything.
        protected: paths never to delete.
        with_optimizer: as in `completeness_problems`.
    Returns:
        The deleted checkpoint paths, oldest first.
    """
    if save_total_limit is None or save_total_limit <= 0:
        return []
    keep = {Path(item).resolve() for item in protected}
    complete = [c for c in list_checkpoints(directory) if is_complete(c, with_optimizer)]
    newest = {c.path.resolve() for c in complete[-save_total_limit:]}
    deleted = []
    for checkpoint in complete:
        resolved = checkpoint.path.resolve()
        if resolved in newest or resolved in keep:
            continue
        shutil.rmtree(checkpoint.path)
        deleted.append(checkpoint.path)
    return deleted


def fsync_tree(path: os.PathLike | str) -> int:
    """Flush a checkpoint directory to stable storage: fsync every file, then each directory, then its parent.

    Needed on network file systems (CephFS, NFS) so that a pod killed right after the save does not leave a
    checkpoint that the next pod sees as complete but whose data never reached the server.
    Returns the number of files flushed. Raises OSError if a file cannot be opened or synced.
    """
    base = Path(path)
    count = 0
    for current, _dirs, files in os.walk(base):
        for name in files:
            fd = os.open(os.path.join(current, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            count += 1
        _fsync_dir(Path(current))
    _fsync_dir(base.parent)
    return count


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
