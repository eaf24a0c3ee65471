"""A tiny LlamaFactory project built locally (nothing downloaded): model, tokenizer, data set and config.yaml.

The model of the recipe-family tests and of `python -m kueue_cohorts.benchmarks.trainer`: a 2-layer Llama (hidden size
32, 2 heads)
built from a `transformers.LlamaConfig` with seeded random weights, a word-level tokenizer made with the
`tokenizers` library over the data set's words, and an alpaca-format data set of counting exercises ("count from 3
by 2" -> "3 5 7 ..."), registered in a `dataset_info.json` the way LlamaFactory 0.9.5 reads local data
(`data/parser.py` `get_dataset_list`: `file_name` relative to `dataset_dir`).
"""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Optional

import yaml

WORDS = ["count", "from", "by", "numbers", "Human:", "Assistant:"]
SPECIAL = {"pad_token": "<pad>", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
NUMBERS = 64


def examples(count: int, seed: int) -> list[dict[str, str]]:
    """`count` alpaca records: instruction "count from <a> by <b>", output the next 8 numbers mod NUMBERS."""
    rng = random.Random(seed)
    records = []
    for _ in range(count):
        start, stride = rng.randrange(NUMBERS), rng.randrange(1, 8)
        records.append({
            "instruction": f"count from {start} by {stride}",
            "input": "",
            "output": " ".join(str((start + stride * i) % NUMBERS) for i in range(8)),
        })
    return records


def build_model(model_dir: Path, seed: int) -> None:
    """Write a tiny LlamaForCausalLM (random, seeded) and its word-level tokenizer to `model_dir`."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(
        list(SPECIAL.values()) + WORDS + [str(n) for n in range(NUMBERS)]
    )}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token=SPECIAL["unk_token"]))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, **SPECIAL)
    tokenizer.save_pretrained(str(model_dir))
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=vocab[SPECIAL["pad_token"]],
        bos_token_id=vocab[SPECIAL["bos_token"]],
        eos_token_id=vocab[SPECIAL["eos_token"]],
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    LlamaForCausalLM(config).save_pretrained(str(model_dir))


def build_project(directory: Path, *, max_steps: int = 30, save_steps: int = 10,
                  save_total_limit: Optional[int] = 2, seed: int = 42, finetuning_type: str = "full",
                  records: int = 256) -> Path:
    """Create `<directory>/model`, `<directory>/data` and `<directory>/config.yaml`; return the config's path.

    Args:
        directory: where to build (created).
        max_steps, save_steps, save_total_limit, seed: the TrainingArguments of the config (steps are optimizer
            steps; save_total_limit None keeps every checkpoint).
        finetuning_type: LlamaFactory's `finetuning_type` ("full" or "lora").
        records: data set size.
    Returns:
        The path of config.yaml, for `KUEUE_COHORTS_RECIPE=llamafactory:<path>`.
    """
    directory = Path(directory)
    model_dir, data_dir = directory / "model", directory / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    build_model(model_dir, seed)
    (data_dir / "tiny.json").write_text(json.dumps(examples(records, seed)))
    (data_dir / "dataset_info.json").write_text(json.dumps({"tiny": {"file_name": "tiny.json"}}))
    config = {
        "model_name_or_path": str(model_dir),
        "trust_remote_code": False,
        "stage": "sft",
        "do_train": True,
        "finetuning_type": finetuning_type,
        "dataset": "tiny",
        "dataset_dir": str(data_dir),
        "template": "default",
        "cutoff_len": 64,
        "overwrite_cache": True,
        "output_dir": "saves/tiny",  # replaced by the runtime with the run directory
        "logging_steps": 5,
        "save_strategy": "steps",
        "save_steps": save_steps,
        "save_total_limit": save_total_limit,
        "plot_loss": False,
        "report_to": "none",
        "per_device_train_batch_size": 4,
        "gradient_accumulation_steps": 1,
        "learning_rate": 1.0e-3,
        "lr_scheduler_type": "linear",
        "max_steps": max_steps,
        "seed": seed,
        "data_seed": seed,
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        "bf16": False,
    }
    if finetuning_type == "lora":
        config.update(lora_rank=4, lora_target="all")
    if save_total_limit is None:
        config.pop("save_total_limit")
    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


if __name__ == "__main__":
    import sys

    print(build_project(Path(sys.argv[1])))
