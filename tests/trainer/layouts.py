"""Checkpoint directory fixtures, one per layout the pinned libraries write, as (relative path -> bytes) trees.

Each tree lists what one `Trainer._save_checkpoint` leaves behind (transformers 5.23.0, accelerate 1.15.0; DeepSpeed's
`DeepSpeedEngine.save_checkpoint` for the deepspeed ones): see trainer/checkpoints.py's table for the source of every
name. `OPTIONAL` names files the layout may or may not have (configuration, helper scripts): removing one of those
keeps the checkpoint complete; removing or emptying any other file must make it incomplete. The fsdp-sharded tree is
the one the two-process FSDP run of test_distributed.py writes for real (checked there).
"""
from __future__ import annotations

import json
from pathlib import Path

CONFIG = {"config.json": b"{}", "generation_config.json": b"{}"}
ONE_PROCESS = {"optimizer.pt": b"o", "scheduler.pt": b"s", "rng_state.pth": b"r", "training_args.bin": b"a"}
TWO_RANKS_RNG = {"rng_state_0.pth": b"r0", "rng_state_1.pth": b"r1"}
SHARDS = {"a.weight": "model-00001-of-00002.safetensors", "b.weight": "model-00002-of-00002.safetensors"}

LAYOUTS: dict[str, tuple[str, int, dict[str, bytes]]] = {
    # name: (detect_layout, world size, tree)
    "plain": ("single", 1, {**CONFIG, **ONE_PROCESS, "pytorch_model.bin": b"w"}),
    "safetensors": ("single", 1, {**CONFIG, **ONE_PROCESS, "model.safetensors": b"w"}),
    "peft-adapter": ("single", 1, {"adapter_config.json": b"{}", **ONE_PROCESS, "adapter_model.safetensors": b"w"}),
    "sharded-safetensors": ("sharded", 1, {
        **CONFIG, **ONE_PROCESS,
        "model.safetensors.index.json": json.dumps({"metadata": {}, "weight_map": SHARDS}).encode(),
        SHARDS["a.weight"]: b"w1", SHARDS["b.weight"]: b"w2",
    }),
    "ddp-two-ranks": ("single", 2, {**CONFIG, **TWO_RANKS_RNG, "model.safetensors": b"w", "optimizer.pt": b"o",
                                    "scheduler.pt": b"s", "training_args.bin": b"a"}),
    "fsdp-sharded": ("fsdp-sharded", 2, {
        "pytorch_model_fsdp_0/.metadata": b"m", "pytorch_model_fsdp_0/__0_0.distcp": b"d0",
        "pytorch_model_fsdp_0/__1_0.distcp": b"d1",
        "optimizer_0/.metadata": b"m", "optimizer_0/__0_0.distcp": b"d0", "optimizer_0/__1_0.distcp": b"d1",
        "scheduler.pt": b"s", **TWO_RANKS_RNG,
    }),
    "fsdp-local": ("fsdp-local", 2, {
        "pytorch_model_fsdp_rank0.bin": b"w0", "pytorch_model_fsdp_rank1.bin": b"w1",
        "optimizer_0/.metadata": b"m", "optimizer_0/__0_0.distcp": b"d0", "optimizer_0/__1_0.distcp": b"d1",
        "scheduler.pt": b"s", **TWO_RANKS_RNG,
    }),
    "fsdp-per-rank-files": ("fsdp-local", 2, {
        "pytorch_model_fsdp_0_rank0.bin": b"w0", "pytorch_model_fsdp_0_rank1.bin": b"w1",
        "optimizer_0_rank0.bin": b"o0", "optimizer_0_rank1.bin": b"o1", "scheduler.pt": b"s", **TWO_RANKS_RNG,
    }),
    "fsdp-full": ("fsdp-full", 2, {
        **CONFIG, "model.safetensors": b"w", "training_args.bin": b"a", "pytorch_model_fsdp.bin": b"w",
        "optimizer.bin": b"o", "scheduler.pt": b"s", **TWO_RANKS_RNG,
    }),
    "deepspeed-zero2": ("deepspeed", 2, {
        **CONFIG, "model.safetensors": b"w", "training_args.bin": b"a", "latest": b"global_step{step}",
        "zero_to_fp32.py": b"# helper", "global_step{step}/mp_rank_00_model_states.pt": b"m",
        "global_step{step}/zero_pp_rank_0_mp_rank_00_optim_states.pt": b"o0",
        "global_step{step}/zero_pp_rank_1_mp_rank_00_optim_states.pt": b"o1", **TWO_RANKS_RNG,
    }),
    "deepspeed-zero3-no-gather": ("deepspeed", 2, {
        **CONFIG, "training_args.bin": b"a", "latest": b"global_step{step}", "zero_to_fp32.py": b"# helper",
        "global_step{step}/zero_pp_rank_0_mp_rank_00_model_states.pt": b"m0",
        "global_step{step}/zero_pp_rank_1_mp_rank_00_model_states.pt": b"m1",
        "global_step{step}/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt": b"o0",
        "global_step{step}/bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt": b"o1",
        "scheduler.pt": b"s", **TWO_RANKS_RNG,  # a custom (non-DeepSpeed) scheduler is saved by the Trainer
    }),
}

OPTIONAL = {"config.json", "generation_config.json", "adapter_config.json", "zero_to_fp32.py"}
# DeepSpeed: the gathered weights exist only when the engine could gather them (ZeRO-3 needs
# stage3_gather_16bit_weights_on_model_save), scheduler.pt only for a scheduler DeepSpeed does not manage; neither
# is knowable from the directory, and resuming reads neither (deepspeed_load_checkpoint reads global_step*/).
OPTIONAL_DEEPSPEED = OPTIONAL | {"model.safetensors", "scheduler.pt"}


def write(run: Path, layout: str, step: int, drop: tuple[str, ...] = (), empty: tuple[str, ...] = (),
          best: str | None = None) -> Path:
    """Write `run/checkpoint-<step>` in `layout` (a LAYOUTS key) with trainer_state.json, minus `drop`, `empty`
    files zero-length; `best` is stored as the state's best_model_checkpoint. Returns the directory."""
    path = run / f"checkpoint-{step}"
    path.mkdir(parents=True)
    for name, data in tree(layout, step).items():
        if name in drop:
            continue
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_bytes(b"" if name in empty else data)
    if "trainer_state.json" not in drop:
        state = {"global_step": step, "best_model_checkpoint": best}
        (path / "trainer_state.json").write_text("" if "trainer_state.json" in empty else json.dumps(state))
    return path


def tree(layout: str, step: int) -> dict[str, bytes]:
    """The layout's files for one step (DeepSpeed's tag names the step)."""
    return {name.format(step=step): data.replace(b"{step}", str(step).encode())
            for name, data in LAYOUTS[layout][2].items()}


def required(layout: str, step: int = 100) -> list[str]:
    """The layout's files whose absence must make the checkpoint incomplete (trainer_state.json included)."""
    optional = OPTIONAL_DEEPSPEED if LAYOUTS[layout][0] == "deepspeed" else OPTIONAL
    return sorted([name for name in tree(layout, step) if Path(name).name not in optional] + ["trainer_state.json"])
