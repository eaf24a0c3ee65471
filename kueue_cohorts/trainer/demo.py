"""A tiny self-contained recipe: a GPT-2 built from a config (no download) trained on synthetic token sequences.

It is the PreemptibleTrainingRuntime's default recipe (`trainer.demo:build_trainer`), so a freshly deployed runtime
runs without a model hub or a data set, and it is the model of the trainer tests and the benchmark. Knobs
(environment, all optional):

| env | default | meaning |
|---|---|---|
| KUEUE_COHORTS_DEMO_MAX_STEPS | 200 | optimizer steps (TrainingArguments.max_steps) |
| KUEUE_COHORTS_DEMO_SAVE_STEPS | 50 | save_steps (KUEUE_COHORTS_SAVE_STEPS overrides it in the entrypoint) |
| KUEUE_COHORTS_DEMO_SAVE_TOTAL_LIMIT | 2 | save_total_limit (0: keep all) |
| KUEUE_COHORTS_DEMO_EVAL_STEPS | 0 | evaluate every N steps on a held-out synthetic set (0: never) |
| KUEUE_COHORTS_DEMO_SEED | 42 | TrainingArguments.seed and the data generator's seed |
| KUEUE_COHORTS_DEMO_WIDTH | 32 | n_embd of the GPT-2 (2 layers, 2 heads, vocabulary 64, 32 positions) |
| KUEUE_COHORTS_DEMO_BEST_MODEL | 0 | 1: the best-model recipe: evaluate at every save (eval_steps = save_steps), \
`load_best_model_at_end` on `eval_loss`; the entrypoint's rotation keeps the best checkpoint |
| KUEUE_COHORTS_DEMO_FSDP | 0 | 1: FSDP2 full sharding (`TrainingArguments.fsdp=True`, `FSDP_CONFIG`), checkpointed as \
a sharded state dict (`pytorch_model_fsdp_0/`, `optimizer_0/`). GPUs only: accelerate 1.15.0 applies an FSDP plugin \
only to multi-accelerator runs (`accelerate/state.py`, `AcceleratorState.__init__`); on CPU it trains with DDP instead |
"""
from __future__ import annotations

import os
from typing import Any

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

VOCAB = 64
SEQUENCE = 32


# FSDP settings of the demo's sharded recipe (TrainingArguments.fsdp_config keys, accelerate
# FullyShardedDataParallelPlugin): a sharded state dict, so every rank writes its own shard of the model and
# optimizer into the checkpoint.
FSDP_CONFIG = {
    "version": 2,
    "state_dict_type": "SHARDED_STATE_DICT",
    "auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
    "transformer_layer_cls_to_wrap": ["GPT2Block"],
    "reshard_after_forward": True,
}


def _int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.strip() else default


class SyntheticTokens(torch.utils.data.Dataset):  # type: ignore[misc]  # torch is not type-checked (pyproject.toml)
    """`count` sequences of `SEQUENCE` token ids in [0, VOCAB): each an arithmetic progression mod VOCAB with a
    seeded random start and stride, so there is something to learn. Items: {"input_ids", "labels"} (LongTensor)."""

    def __init__(self, count: int, seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)
        start = torch.randint(0, VOCAB, (count, 1), generator=generator)
        stride = torch.randint(1, 8, (count, 1), generator=generator)
        self.tokens = (start + stride * torch.arange(SEQUENCE)) % VOCAB

    def __len__(self) -> int:
        return int(self.tokens.shape[0])

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        row = self.tokens[index]
        return {"input_ids": row, "labels": row}


def tiny_model(width: int = 32) -> GPT2LMHeadModel:
    """A randomly initialised 2-layer GPT-2 (n_embd=width, dropout 0), built from a config: nothing downloaded."""
    config = GPT2Config(
        vocab_size=VOCAB,
        n_positions=SEQUENCE,
        n_embd=width,
        n_layer=2,
        n_head=2,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=0,
        eos_token_id=0,
    )
    return GPT2LMHeadModel(config)


def build_trainer(output_dir: str, callbacks: list[TrainerCallback] | None = None,
                  trainer_class: type[Trainer] = Trainer) -> Trainer:
    """The recipe: `build_trainer(output_dir) -> transformers.Trainer` (not yet trained).

    Args:
        output_dir: the run's checkpoint directory (given by the entrypoint).
        callbacks: extra TrainerCallbacks (tests use them to stop at a chosen moment).
        trainer_class: a Trainer subclass to instantiate (default transformers.Trainer).
    """
    seed = _int("KUEUE_COHORTS_DEMO_SEED", 42)
    save_steps = _int("KUEUE_COHORTS_DEMO_SAVE_STEPS", 50)
    best_model = _int("KUEUE_COHORTS_DEMO_BEST_MODEL", 0) == 1
    eval_steps = save_steps if best_model else _int("KUEUE_COHORTS_DEMO_EVAL_STEPS", 0)
    fsdp = _int("KUEUE_COHORTS_DEMO_FSDP", 0) == 1
    torch.manual_seed(seed)
    extra: dict[str, Any] = {}
    if best_model:
        extra.update(load_best_model_at_end=True, metric_for_best_model="eval_loss", greater_is_better=False)
    if fsdp:
        extra.update(fsdp=True, fsdp_config=dict(FSDP_CONFIG))
    args = TrainingArguments(
        output_dir=output_dir,
        max_steps=_int("KUEUE_COHORTS_DEMO_MAX_STEPS", 200),
        per_device_train_batch_size=4,
        per_device_eval_batch_size=8,
        learning_rate=1e-3,
        save_strategy="steps",
        save_steps=save_steps,
        save_total_limit=_int("KUEUE_COHORTS_DEMO_SAVE_TOTAL_LIMIT", 2) or None,
        eval_strategy="steps" if eval_steps else "no",
        eval_steps=eval_steps or None,
        logging_steps=10,
        seed=seed,
        data_seed=seed,
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        use_cpu=not torch.cuda.is_available(),
        **extra,
    )
    return trainer_class(
        model=tiny_model(_int("KUEUE_COHORTS_DEMO_WIDTH", 32)),
        args=args,
        train_dataset=SyntheticTokens(256, seed),
        eval_dataset=SyntheticTokens(64, seed + 1) if eval_steps else None,
        callbacks=callbacks,
    )
