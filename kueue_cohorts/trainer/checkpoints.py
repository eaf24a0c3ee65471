"""Checkpoint discovery, completeness and rotation for one run's directory (standard library only).

A run's checkpoints live in `<checkpoint root>/<TrainJob name>/checkpoint-<global step>/` (Hugging Face Trainer,
`transformers.trainer.Trainer._save_checkpoint`). Only real directories (never symbolic links) named exactly
`checkpoint-<int>` count, ordered by that integer.

Completeness follows what the pinned libraries write (transformers 5.23.0 `trainer.py`: `_save_checkpoint`,
`save_model`, `_save`, `_save_optimizer_and_scheduler`, `_save_rng_state`; accelerate 1.15.0
`utils/fsdp_utils.py`: `save_fsdp_model`, `save_fsdp_optimizer`; DeepSpeed `runtime/engine.py`:
`DeepSpeedEngine.save_checkpoint`, `_get_ckpt_name`, `_get_zero_ckpt_name`). Every layout needs:

- `trainer_state.json`, valid JSON whose `global_step` equals the directory's number (`_save_checkpoint`, rank 0);
- unless the run saves only the model (`save_only_model`): the RNG state of every process, `rng_state.pth` with one
  process or `rng_state_<rank>.pth` for each rank 0..world_size-1 (`_save_rng_state`, every rank);

and, per layout (`detect_layout`):

| layout | weights | optimizer (unless save_only_model) | training_args.bin |
|---|---|---|---|
| `single` (plain / safetensors / PEFT adapter) | `model.safetensors`, `pytorch_model.bin`, \
`adapter_model.safetensors` or `adapter_model.bin` (`Trainer._save` -> `save_pretrained`) | `optimizer.pt` + \
`scheduler.pt` | yes |
| `sharded` (sharded safetensors / bin) | `model.safetensors.index.json` or `pytorch_model.bin.index.json` and every \
shard its `weight_map` names (`save_pretrained`, models over `max_shard_size`) | `optimizer.pt` + `scheduler.pt` | yes |
| `fsdp-sharded` (FSDP SHARDED_STATE_DICT, torch.distributed.checkpoint) | `pytorch_model_fsdp_0/` holding `.metadata` \
and `__<rank>_<n>.distcp` files (`save_fsdp_model`, `use_dcp=True`); `save_model` writes nothing else for this state \
dict type | `optimizer_0/` (same format, `save_fsdp_optimizer`) + `scheduler.pt` | no (`save_model` skips `_save`) |
| `fsdp-local` (FSDP LOCAL_STATE_DICT or `use_dcp=False`) | `pytorch_model_fsdp_rank<r>.bin` / \
`pytorch_model_fsdp_0_rank<r>.bin` for every rank | `optimizer_0/` or `optimizer_0_rank<r>.bin` for every rank + \
`scheduler.pt` | no |
| `fsdp-full` (FSDP FULL_STATE_DICT) | `pytorch_model_fsdp.bin` (what resume loads) and the gathered \
`model.safetensors` (`save_model` -> `_save`) | `optimizer.bin` + `scheduler.pt` | yes |
| `deepspeed` | `latest` (the tag, written by rank 0 after every rank's files) naming a directory `global_step<N>/` \
inside the checkpoint with `*_model_states.pt` (ZeRO-3: `zero_pp_rank_<r>_mp_rank_<m>_model_states.pt` for every \
data-parallel rank); with ZeRO, `*zero_pp_rank_<r>_mp_rank_<m>_optim_states.pt` for every data-parallel rank; \
`model.safetensors` only when DeepSpeed could gather the weights | inside the tag directory (`scheduler.pt` only for a \
custom scheduler) | yes |

No file may be zero-length or a symbolic link, and file names read from the checkpoint (shard names, the DeepSpeed
tag) must be single path components. Incomplete checkpoints are reported and skipped, never deleted: they may be the
only evidence of what went wrong. This module is shipped into the training container (ConfigMap), so it imports
nothing outside the standard library.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Callable, Iterable, Optional

CHECKPOINT_NAME = re.compile(r"checkpoint-([0-9]+)")  # always fullmatch: `$` would accept a trailing newline
TRAINER_STATE = "trainer_state.json"
TRAINING_ARGS = "training_args.bin"
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "adapter_model.safetensors", "adapter_model.bin")
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
OPTIMIZER = "optimizer.pt"
OPTIMIZER_BIN = "optimizer.bin"  # accelerate OPTIMIZER_NAME + ".bin": FSDP full state
SCHEDULER = "scheduler.pt"
SCALER = "scaler.pt"
FSDP_MODEL = "pytorch_model_fsdp"  # accelerate FSDP_MODEL_NAME
FSDP_MODEL_DIR = "pytorch_model_fsdp_0"
FSDP_OPTIMIZER_DIR = "optimizer_0"
DCP_METADATA = ".metadata"
DEEPSPEED_LATEST = "latest"
LAYOUTS = ("single", "sharded", "fsdp-sharded", "fsdp-local", "fsdp-full", "deepspeed")

_RUN_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_RNG_RANK = re.compile(r"rng_state_([0-9]+)\.pth")
_DISTCP = re.compile(r"__([0-9]+)_([0-9]+)\.distcp")
_FSDP_RANK_FILE = re.compile(r"pytorch_model_fsdp(?:_0)?_rank([0-9]+)\.bin")
_OPTIMIZER_RANK_FILE = re.compile(r"optimizer_0_rank([0-9]+)\.bin")
_DS_MODEL_STATES = re.compile(r".*_model_states\.pt")
_DS_OPTIM_RANK = re.compile(r"(?:bf16_)?zero_pp_rank_([0-9]+)_mp_rank_[0-9]+_?optim_states\.pt")
_DS_MODEL_RANK = re.compile(r"zero_pp_rank_([0-9]+)_mp_rank_[0-9]+_model_states\.pt")  # ZeRO-3: one per rank

log = logging.getLogger("kueue_cohorts.trainer")


@dataclass(frozen=True, order=True)
class Checkpoint:
    """One `checkpoint-<step>` directory: `step` (int, the Trainer's global_step) and its `path`."""

    step: int
    path: Path


def run_dir(root: os.PathLike[str] | str, run_name: str) -> Path:
    """The run-scoped checkpoint directory `<root>/<run_name>`.

    Args:
        root: the checkpoint root (the RWX PVC's mount path, e.g. /mnt/checkpoints).
        run_name: the TrainJob name (an RFC 1035 label); one path component of letters, digits, '-', '_', '.',
            starting and ending with a letter or digit. The whole string must match (a trailing newline does not).
    Returns:
        The directory path (not created).
    Raises:
        ValueError: run_name is empty or not a single safe path component.
    """
    if not run_name or not _RUN_NAME.fullmatch(run_name):
        raise ValueError(
            f"run name {run_name!r} must be one path component of letters, digits, '-', '_' or '.' "
            "(the TrainJob name); set KUEUE_COHORTS_RUN_NAME"
        )
    path = Path(root) / run_name
    _refuse_link_out(Path(root), path)
    return path


def _refuse_link_out(root: Path, path: Path) -> None:
    """Raise ValueError when ``path`` (a run directory under ``root``) is a symbolic link, or resolves outside
    ``root``: anyone who can write the shared volume could otherwise point a run, its resume and its rotation
    (which deletes) at other data."""
    if path.is_symlink():
        raise ValueError(f"{path} is a symbolic link (to {os.readlink(path)!r}): a run directory on the shared "
                         "checkpoint volume must be a real directory; remove the link")
    if path.exists() and not path.resolve().is_relative_to(root.resolve()):
        raise ValueError(f"{path} resolves to {path.resolve()}, outside the checkpoint root {root}")


def ensure_run_dir(root: os.PathLike[str] | str, run_name: str) -> Path:
    """Create ``<root>/<run_name>`` (``run_dir``) if missing and return it, never following a symbolic link out of
    the checkpoint root: the directory is checked again after ``mkdir`` (a link that appeared in between is
    refused) with ``lstat``, so it is a real directory inside ``root``.

    Raises:
        ValueError: run_name is not one safe path component, or the run directory is a symbolic link, not a
            directory, or outside ``root``.
        OSError: the directory cannot be created.
    """
    path = run_dir(root, run_name)
    path.mkdir(parents=True, exist_ok=True)
    _refuse_link_out(Path(root), path)
    if not stat.S_ISDIR(os.lstat(path).st_mode):
        raise ValueError(f"{path} is not a directory")
    return path


def checkpoint_step(name: str) -> Optional[int]:
    """The step of a directory name `checkpoint-<int>` (whole name), else None ('checkpoint-5\\n' is None)."""
    match = CHECKPOINT_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


def list_checkpoints(directory: os.PathLike[str] | str) -> list[Checkpoint]:
    """Every real directory named exactly `checkpoint-<int>` in `directory`, oldest (lowest step) first.

    Other names (`checkpoint-12abc`, `checkpoint-12.tmp`, a trailing newline), files, and symbolic links (even to a
    directory: anyone who can write the shared volume could point a run at other data) are ignored; a symlink is
    logged. A missing directory yields []. Steps compare as integers (checkpoint-100 is newer than checkpoint-99).
    """
    base = Path(directory)
    try:
        entries = list(os.scandir(base))
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for entry in entries:
        step = checkpoint_step(entry.name)
        if step is None:
            continue
        if entry.is_symlink():
            log.warning("ignoring %s: a symbolic link, not a checkpoint directory", base / entry.name)
            continue
        if entry.is_dir(follow_symlinks=False):
            found.append(Checkpoint(step, base / entry.name))
    return sorted(found)


# --- completeness --------------------------------------------------------------------------------------------------


def _scan(path: Path) -> dict[str, os.DirEntry[str]]:
    """Name -> DirEntry of a directory's entries ({} if it is not a readable real directory)."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return {}
        return {entry.name: entry for entry in os.scandir(path)}
    except OSError:
        return {}


def _regular_non_empty(entry: Optional[os.DirEntry[str]]) -> bool:
    try:
        return (
            entry is not None and entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_size > 0
        )
    except OSError:
        return False


def _real_dir(entry: Optional[os.DirEntry[str]]) -> bool:
    return entry is not None and entry.is_dir(follow_symlinks=False)


def _file_problem(entries: dict[str, os.DirEntry[str]], name: str, where: str = "") -> list[str]:
    if _regular_non_empty(entries.get(name)):
        return []
    entry = entries.get(name)
    what = "is a symbolic link" if entry is not None and entry.is_symlink() else "is missing or empty"
    return [f"{where}{name} {what}"]


def _one_component(name: object) -> bool:
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\0" not in name


def _ranks(found: Iterable[int], world_size: Optional[int]) -> list[int]:
    """Ranks expected but not found: 0..world_size-1, or 0..max(found) when the world size is unknown."""
    found = set(found)
    expected = range(world_size) if world_size else range(max(found) + 1 if found else 1)
    return [rank for rank in expected if rank not in found]


def detect_layout(path: os.PathLike[str] | str) -> str:
    """Which writer produced a checkpoint directory: one of LAYOUTS (see the module docstring's table).

    Decided from marker entries only: `latest` or `global_step*/` -> deepspeed; `pytorch_model_fsdp_0/` ->
    fsdp-sharded; per-rank `pytorch_model_fsdp*_rank<r>.bin` -> fsdp-local; `pytorch_model_fsdp.bin` or
    `optimizer.bin` -> fsdp-full; a weight index -> sharded; otherwise single.
    """
    entries = _scan(Path(path))
    names = set(entries)
    if DEEPSPEED_LATEST in names or any(n.startswith("global_step") and _real_dir(entries[n]) for n in names):
        return "deepspeed"
    if FSDP_MODEL_DIR in names:
        return "fsdp-sharded"
    if any(_FSDP_RANK_FILE.fullmatch(n) for n in names):
        return "fsdp-local"
    if f"{FSDP_MODEL}.bin" in names or OPTIMIZER_BIN in names:
        return "fsdp-full"
    if any(n in names for n in WEIGHT_INDEXES):
        return "sharded"
    return "single"


def _dcp_problems(entries: dict[str, os.DirEntry[str]], name: str, world_size: Optional[int]) -> list[str]:
    """A torch.distributed.checkpoint directory: `.metadata` (written last, by the coordinator) and per-rank data."""
    if not _real_dir(entries.get(name)):
        return [f"{name}/ is missing"]
    inside = _scan(Path(entries[name].path))
    problems = _file_problem(inside, DCP_METADATA, f"{name}/")
    data = {n: m for n in inside if (m := _DISTCP.fullmatch(n))}
    if not data:
        return problems + [f"{name}/ holds no .distcp data"]
    problems += [f"{name}/{n} is missing or empty" for n in sorted(data) if not _regular_non_empty(inside[n])]
    missing = _ranks((int(m.group(1)) for m in data.values()), world_size)
    problems += [f"{name}/ has no data of rank {rank}" for rank in missing]
    return problems


def _per_rank_problems(entries: dict[str, os.DirEntry[str]], regex: re.Pattern[str], label: str,
                       world_size: Optional[int]) -> list[str]:
    found = {n: m for n in entries if (m := regex.fullmatch(n))}
    problems = [f"{n} is missing or empty" for n in sorted(found) if not _regular_non_empty(entries[n])]
    return problems + [
        f"{label} of rank {rank} is missing" for rank in _ranks((int(m.group(1)) for m in found.values()), world_size)
    ]


def _index_problems(path: Path, entries: dict[str, os.DirEntry[str]], index: str) -> list[str]:
    if not _regular_non_empty(entries.get(index)):
        return _file_problem(entries, index)
    try:
        shards = set(json.loads((path / index).read_text())["weight_map"].values())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return [f"{index} is not a valid weight index"]
    problems = []
    for shard in sorted(shards, key=str):
        if not _one_component(shard):
            problems.append(f"{index} names a shard outside the checkpoint: {shard!r}")
        elif not _regular_non_empty(entries.get(shard)):
            problems.append(f"weight shard {shard} is missing or empty")
    return problems


def _single_weight_problems(entries: dict[str, os.DirEntry[str]]) -> list[str]:
    present = [name for name in WEIGHT_FILES if name in entries]
    if not present:
        return ["no model weights (" + ", ".join(WEIGHT_FILES + WEIGHT_INDEXES) + ")"]
    problems = []
    for name in present:
        if not _regular_non_empty(entries[name]):
            problems.append(f"{name} is empty" if entries[name].is_file(follow_symlinks=False)
                            else f"{name} is missing, a symbolic link or not a file")
    return problems


def _deepspeed_problems(path: Path, entries: dict[str, os.DirEntry[str]], with_optimizer: bool,
                        world_size: Optional[int]) -> list[str]:
    if not _regular_non_empty(entries.get(DEEPSPEED_LATEST)):
        return _file_problem(entries, DEEPSPEED_LATEST)
    try:
        tag = (path / DEEPSPEED_LATEST).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return [f"{DEEPSPEED_LATEST} is unreadable"]
    if not _one_component(tag):
        return [f"{DEEPSPEED_LATEST} names a tag outside the checkpoint: {tag!r}"]
    if not _real_dir(entries.get(tag)):
        return [f"{DEEPSPEED_LATEST} names {tag}/, which is missing or not a real directory"]
    inside = _scan(path / tag)
    states = [n for n in inside if _DS_MODEL_STATES.fullmatch(n)]
    problems = [] if states else [f"{tag}/ holds no *_model_states.pt"]
    problems += [f"{tag}/{n} is missing or empty" for n in sorted(states) if not _regular_non_empty(inside[n])]
    partitions = [int(m.group(1)) for n in states if (m := _DS_MODEL_RANK.fullmatch(n))]
    if partitions:  # ZeRO-3 partitions the parameters: one model-states file per data-parallel rank
        problems += [f"{tag}/ has no ZeRO-3 model state of rank {rank}" for rank in _ranks(partitions, world_size)]
    optim = {n: m for n in inside if (m := _DS_OPTIM_RANK.fullmatch(n))}
    if with_optimizer and optim:  # ZeRO: one optimizer partition per data-parallel rank
        problems += [f"{tag}/{n} is missing or empty" for n in sorted(optim) if not _regular_non_empty(inside[n])]
        problems += [f"{tag}/ has no ZeRO optimizer state of rank {rank}"
                     for rank in _ranks((int(m.group(1)) for m in optim.values()), world_size)]
    for name in WEIGHT_FILES:  # the gathered 16-bit weights, when DeepSpeed could gather them
        if name in entries and not _regular_non_empty(entries[name]):
            problems.append(f"{name} is empty")
    return problems


def _rng_problems(entries: dict[str, os.DirEntry[str]], world_size: Optional[int]) -> list[str]:
    ranked = {n: m for n in entries if (m := _RNG_RANK.fullmatch(n))}
    if world_size == 1 or (world_size is None and not ranked):
        return _file_problem(entries, "rng_state.pth")
    problems = [f"{n} is missing or empty" for n in sorted(ranked) if not _regular_non_empty(entries[n])]
    return problems + [f"rng_state_{rank}.pth is missing"
                       for rank in _ranks((int(m.group(1)) for m in ranked.values()), world_size)]


def completeness_problems(checkpoint: Checkpoint, with_optimizer: bool = True,
                          world_size: Optional[int] = None) -> list[str]:
    """What is missing or broken in a checkpoint, for its layout (`detect_layout`); [] means complete.

    Args:
        checkpoint: the directory to check.
        with_optimizer: False when the run saves only the model (`save_only_model=True`): then optimizer,
            scheduler and RNG state are not required.
        world_size: the number of training processes that wrote it (torch.distributed WORLD_SIZE), or None to
            infer it from the per-rank files present (then a missing highest rank cannot be noticed).
    Returns:
        Human-readable problems, e.g. ["trainer_state.json is missing", "rng_state_1.pth is missing"].
    """
    path = checkpoint.path
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            return [f"{path.name} is a symbolic link"]
    except OSError:
        return [f"{path.name} is missing"]
    entries = _scan(path)
    layout = detect_layout(path)
    problems = []
    state = entries.get(TRAINER_STATE)
    if not _regular_non_empty(state):
        problems += [f"{TRAINER_STATE} is missing"] if state is None else _file_problem(entries, TRAINER_STATE)
    else:
        try:
            step = json.loads((path / TRAINER_STATE).read_text())["global_step"]
            if step != checkpoint.step:
                problems.append(f"{TRAINER_STATE} says global_step {step}, the directory says {checkpoint.step}")
        except (OSError, ValueError, KeyError, TypeError):
            problems.append(f"{TRAINER_STATE} is not valid trainer state JSON")
    if layout not in ("fsdp-sharded", "fsdp-local"):
        problems += _file_problem(entries, TRAINING_ARGS)
    if layout == "deepspeed":
        problems += _deepspeed_problems(path, entries, with_optimizer, world_size)
    elif layout == "fsdp-sharded":
        problems += _dcp_problems(entries, FSDP_MODEL_DIR, world_size)
    elif layout == "fsdp-local":
        problems += _per_rank_problems(entries, _FSDP_RANK_FILE, "FSDP model shard", world_size)
    elif layout == "fsdp-full":
        problems += _file_problem(entries, f"{FSDP_MODEL}.bin") + _single_weight_problems(entries)
    elif layout == "sharded":
        for index in WEIGHT_INDEXES:
            if index in entries:
                problems += _index_problems(path, entries, index)
    else:
        problems += _single_weight_problems(entries)
    if with_optimizer:
        if layout in ("fsdp-sharded", "fsdp-local"):
            if FSDP_OPTIMIZER_DIR in entries or layout == "fsdp-sharded":
                problems += _dcp_problems(entries, FSDP_OPTIMIZER_DIR, world_size)
            else:
                problems += _per_rank_problems(entries, _OPTIMIZER_RANK_FILE, "FSDP optimizer shard", world_size)
        elif layout == "fsdp-full":
            problems += _file_problem(entries, OPTIMIZER_BIN)
        elif layout != "deepspeed":
            problems += _file_problem(entries, OPTIMIZER)
        if layout != "deepspeed" or SCHEDULER in entries:
            problems += _file_problem(entries, SCHEDULER)
        if SCALER in entries:
            problems += _file_problem(entries, SCALER)
        problems += _rng_problems(entries, world_size)
    return problems


def is_complete(checkpoint: Checkpoint, with_optimizer: bool = True, world_size: Optional[int] = None) -> bool:
    """True when `completeness_problems(checkpoint, with_optimizer, world_size)` is empty."""
    return not completeness_problems(checkpoint, with_optimizer, world_size)


def newest_complete(directory: os.PathLike[str] | str, with_optimizer: bool = True,
                    world_size: Optional[int] = None) -> Optional[Checkpoint]:
    """The newest complete checkpoint of a run directory (any layout), or None when there is none.

    Every newer incomplete checkpoint is logged (warning, with its problems) and skipped; nothing is deleted.
    Symbolic links named checkpoint-<N> are never candidates (`list_checkpoints`).
    """
    for checkpoint in reversed(list_checkpoints(directory)):
        problems = completeness_problems(checkpoint, with_optimizer, world_size)
        if not problems:
            return checkpoint
        log.warning(
            "skipping incomplete checkpoint %s (kept, not deleted): %s", checkpoint.path, "; ".join(problems)
        )
    return None


# --- rotation ------------------------------------------------------------------------------------------------------


def best_checkpoint_name(best_model_checkpoint: Optional[str]) -> Optional[str]:
    """The directory name (`checkpoint-<N>`) of `TrainerState.best_model_checkpoint`, or None.

    The Trainer stores the best checkpoint as a path (`<output_dir>/checkpoint-<best_global_step>`); only its last
    component is used, so a checkpoint root mounted at another path on the next pod still matches.
    """
    if not best_model_checkpoint:
        return None
    name = Path(str(best_model_checkpoint).rstrip("/")).name
    return name if checkpoint_step(name) is not None else None


def _remove(path: Path) -> bool:
    """Delete one checkpoint directory without following symbolic links. Returns True when it is gone.

    Already gone (another process deleted it first, or deletes files under it meanwhile) counts as deleted. A path
    that became a symbolic link or a file is left alone (False, logged).
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return True
    if not stat.S_ISDIR(mode):
        log.warning("not rotating %s away: no longer a real directory", path)
        return False

    def gone_is_fine(_function: Callable[..., object], _path: str,
                     exc_info: BaseException | tuple[type[BaseException], BaseException, TracebackType]) -> None:
        error = exc_info if isinstance(exc_info, BaseException) else exc_info[1]
        if not isinstance(error, FileNotFoundError):
            raise error

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=gone_is_fine)
    else:  # pragma: no cover - the container's python may be 3.11
        shutil.rmtree(path, onerror=gone_is_fine)
    return True


def rotate(
    directory: os.PathLike[str] | str,
    save_total_limit: Optional[int],
    protected: Iterable[os.PathLike[str] | str] = (),
    with_optimizer: bool = True,
    best_model_checkpoint: Optional[str] = None,
    world_size: Optional[int] = None,
) -> list[Path]:
    """Delete the oldest complete checkpoints beyond `save_total_limit`, the way the Trainer rotates, but safely.

    Follows `transformers.trainer_utils.rotate_checkpoints` (5.23.0; the entrypoint switches the Trainer's own copy
    off): the newest checkpoint and the best one (`best_model_checkpoint`) are always kept, and the number kept is
    `max(save_total_limit, number of protected checkpoints)`, so with `save_total_limit=1` and a best checkpoint that
    is not the newest, two remain. Deliberate differences: only complete checkpoints count and are ever deleted
    (an incomplete one, possibly another writer's save in progress, is never touched); ordering is by step, never
    mtime; `protected` (the checkpoint just written, the one this attempt resumed from) is kept too; symbolic links
    are neither counted nor followed; a checkpoint already gone counts as deleted. Call it only on the process that
    owns the run directory (world rank 0), never on every node.

    Args:
        directory: the run directory.
        save_total_limit: the recipe's `TrainingArguments.save_total_limit`; None or <= 0 keeps everything.
        protected: checkpoint paths never to delete (matched by directory name within `directory`).
        with_optimizer, world_size: as in `completeness_problems`.
        best_model_checkpoint: `TrainerState.best_model_checkpoint` (a path or None).
    Returns:
        The deleted checkpoint paths, oldest first.
    Raises:
        OSError: a checkpoint could not be deleted for another reason than being gone already.
    """
    if save_total_limit is None or save_total_limit <= 0:
        return []
    complete = [c for c in list_checkpoints(directory) if is_complete(c, with_optimizer, world_size)]
    if len(complete) <= save_total_limit:
        return []
    names = {c.path.name for c in complete}
    keep = {complete[-1].path.name} | {Path(p).name for p in protected}
    best = best_checkpoint_name(best_model_checkpoint)
    if best:
        keep.add(best)
    remaining = len(complete)
    to_keep = max(save_total_limit, len(keep & names))
    deleted = []
    for checkpoint in complete:
        if remaining <= to_keep:
            break
        if checkpoint.path.name in keep:
            continue
        if _remove(checkpoint.path):
            deleted.append(checkpoint.path)
            remaining -= 1
    return deleted


# --- flush ---------------------------------------------------------------------------------------------------------


def fsync_tree(path: os.PathLike[str] | str) -> int:
    """Flush a checkpoint directory to stable storage: fsync every file, then each directory, then its parent.

    Needed on network file systems (CephFS, NFS) so that a pod killed right after the save does not leave a
    checkpoint that the next pod sees as complete but whose data never reached the server. fsync flushes this
    client's dirty pages only, so in multi-node training every node flushes (files another node wrote cost a
    round trip each, no data). Symbolic links are not followed. Returns the number of files flushed. Raises OSError
    if a file cannot be opened or synced.
    """
    base = Path(path)
    count = 0
    for current, _dirs, files in os.walk(base):
        for name in files:
            file_path = os.path.join(current, name)
            if os.path.islink(file_path):
                continue
            try:
                fd = os.open(file_path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            except FileNotFoundError:  # a writer's temporary file, renamed meanwhile
                continue
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
