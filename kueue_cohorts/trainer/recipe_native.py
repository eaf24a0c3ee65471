"""training_hub and mini_trainer under the runtime.

Selected by `training-hub:<algorithm>[:<params.json>]` and `mini-trainer:<params.json>`.

Neither family trains on a node without CUDA (the reasons, with file and version, are in REASONS and
trainer/RECIPES.md), so on such a node the runtime refuses them at start with that reason (exit 2) instead of
crashing inside their launchers. On a CUDA node they run with their own SIGTERM checkpointing switched on
(`on_demand_checkpointing=True` for mini_trainer, `enable_jit_checkpoint=True` for training_hub), output into the run
directory, and resume from the newest full-state checkpoint that `full_state_problems` finds complete (stricter than
their own check, which only looks for `training_state.pt`: mini_trainer 0.9.0
`full_state_checkpoint.py` `find_latest_full_state_checkpoint`).

mini_trainer's full-state layout (`FullStateCheckpointer.save`, full_state_checkpoint.py, rhai-innovation-mini-trainer
0.9.0), `<output_dir>/full_state_checkpoints/step_<N>/`:
- `distributed/` with `.metadata` (torch.distributed.checkpoint, written last by the DCP coordinator) and
  `__<rank>_<n>.distcp` for every rank;
- `optimizer_rank_<r>.pt` and `rng_state_rank_<r>.pt` for every rank r;
- `training_state.pt` (rank 0, after its own shards but before the barrier) and `config.json` (rank 0).
"""
from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Optional

from .recipes import FamilyRecipe

log = logging.getLogger("kueue_cohorts.trainer")

FULL_STATE_DIR = "full_state_checkpoints"
_STEP = re.compile(r"step_([0-9]+)")
_DISTCP = re.compile(r"__([0-9]+)_([0-9]+)\.distcp")

# Why each family cannot train without CUDA, read in the newest versions PyPI serves (trainer/RECIPES.md).
REASONS = {
    "mini-trainer": (
        "rhai-innovation-mini-trainer 0.9.0 trains only on CUDA: utils.py init_distributed_environment calls "
        "torch.distributed.init_process_group('nccl', device_id=torch.device('cuda', local_rank)) and "
        "setup_model_for_training.py wraps the model with init_device_mesh('cuda', ...) (FSDP2)"
    ),
    "training-hub:sft": (
        "training-hub 0.11.2 sft runs instructlab-training 0.16.2, whose main_ds.py calls "
        "torch.cuda.set_device(LOCAL_RANK) before training"
    ),
    "training-hub:osft": (
        "training-hub 0.11.2 osft runs rhai-innovation-mini-trainer, which trains only on CUDA (nccl process group, "
        "init_device_mesh('cuda'))"
    ),
    "training-hub:lora_sft": (
        "training-hub 0.11.2 lora_sft runs Unsloth (algorithms/lora.py UnslothLoRABackend imports unsloth), which "
        "needs an NVIDIA/AMD/Intel GPU at import"
    ),
}


def reason(family: str, algorithm: str = "") -> str:
    """The reason a family (and training_hub algorithm) cannot train on this node, or "" when it can.

    Args:
        family: "mini-trainer" or "training-hub".
        algorithm: the training_hub algorithm ("sft", "osft", "lora_sft", ...); ignored for mini-trainer.
    Returns:
        "" when CUDA is available and the algorithm is supported; otherwise the sentence to log.
    """
    key = family if family == "mini-trainer" else f"training-hub:{algorithm}"
    if key not in REASONS:
        return (f"training_hub algorithm {algorithm!r} is not supported by this runtime: use sft or osft "
                "(their on-demand checkpoints are full-state and resumable)")
    import torch

    if torch.cuda.is_available():
        return ""
    return f"no CUDA device on this node: {REASONS[key]}"


def full_state_problems(step_dir: Path, world_size: Optional[int] = None) -> list[str]:
    """What is missing in one mini_trainer full-state checkpoint `step_<N>/`; [] means complete.

    Args:
        step_dir: the `full_state_checkpoints/step_<N>` directory.
        world_size: the number of ranks that wrote it, or None to infer it from the per-rank files present.
    Returns:
        Problems such as "optimizer_rank_1.pt is missing", "distributed/.metadata is missing or empty".
    """
    if step_dir.is_symlink() or not step_dir.is_dir():
        return [f"{step_dir.name} is not a real directory"]
    names = {p.name: p for p in step_dir.iterdir()}

    def ok(path: Optional[Path]) -> bool:
        return path is not None and not path.is_symlink() and path.is_file() and path.stat().st_size > 0

    problems = [f"{name} is missing or empty" for name in ("training_state.pt", "config.json")
                if not ok(names.get(name))]
    dcp = step_dir / "distributed"
    shards: set[int] = set()
    if dcp.is_symlink() or not dcp.is_dir():
        problems.append("distributed/ is missing")
    else:
        if not ok(dcp / ".metadata" if (dcp / ".metadata").exists() else None):
            problems.append("distributed/.metadata is missing or empty")
        for entry in dcp.iterdir():
            match = _DISTCP.fullmatch(entry.name)
            if match and ok(entry):
                shards.add(int(match.group(1)))
    ranked = {}
    for prefix in ("optimizer_rank_", "rng_state_rank_"):
        ranked[prefix] = {int(n[len(prefix):-3]) for n, p in names.items()
                          if n.startswith(prefix) and n.endswith(".pt") and n[len(prefix):-3].isdigit() and ok(p)}
    if world_size is None:
        world_size = max([0, *shards, *ranked["optimizer_rank_"], *ranked["rng_state_rank_"]]) + 1
    for rank in range(world_size):
        if rank not in shards:
            problems.append(f"distributed/__{rank}_0.distcp is missing")
        for prefix, found in ranked.items():
            if rank not in found:
                problems.append(f"{prefix}{rank}.pt is missing")
    return problems


def newest_complete_full_state(output_dir: Path, world_size: Optional[int] = None) -> Optional[Path]:
    """The newest complete `full_state_checkpoints/step_<N>` of a run directory, or None; newer incomplete ones are
    logged and skipped (never deleted)."""
    root = Path(output_dir) / FULL_STATE_DIR
    if not root.is_dir():
        return None
    found = sorted(((int(m.group(1)), p) for p in root.iterdir() if (m := _STEP.fullmatch(p.name))), reverse=True)
    for _step, path in found:
        problems = full_state_problems(path, world_size)
        if not problems:
            return path
        log.warning("skipping incomplete checkpoint %s (kept, not deleted): %s", path, "; ".join(problems))
    return None


def run(recipe: FamilyRecipe, run_dir: Path, save_steps: Optional[int]) -> int:
    """Refuse (exit 2, with the reason) where the family cannot train; otherwise hand over to its launcher with
    on-demand checkpointing on and the newest complete full-state checkpoint to resume from."""
    algorithm, _, params_path = recipe.target.partition(":")
    if recipe.family == "mini-trainer":
        algorithm, params_path = "", recipe.target
    why = reason(recipe.family, algorithm)
    if why:
        log.error("KUEUE_COHORTS_RECIPE=%s:%s cannot run here: %s", recipe.family, recipe.target, why)
        return 2
    import json

    params = json.loads(Path(params_path).read_text()) if params_path else {}
    world_size = int(os.environ.get("WORLD_SIZE", "1") or 1)
    resume = newest_complete_full_state(run_dir, world_size)
    if save_steps is not None:
        log.warning("KUEUE_COHORTS_SAVE_STEPS=%d ignored: %s saves by samples, not steps", save_steps, recipe.family)
    if recipe.family == "mini-trainer":
        from mini_trainer import TorchrunArgs, TrainingArgs, run_training

        params.update(output_dir=str(run_dir), on_demand_checkpointing=True,
                      resume_from_full_state_checkpoint=str(resume) if resume else None)
        run_training(TorchrunArgs(**params.pop("torchrun", {})), TrainingArgs(**params))
        return 0
    import training_hub

    params.update(ckpt_output_dir=str(run_dir), enable_jit_checkpoint=True)
    getattr(training_hub, algorithm)(**params)
    return 0
