"""LlamaFactory under the checkpoint-safe runtime: `KUEUE_COHORTS_RECIPE=llamafactory:<config.yaml>`.

Runs what `llamafactory-cli train <config.yaml>` runs (llamafactory 0.9.5 `cli.py` -> `train/tuner.py`
`run_exp(args, callbacks)` -> `_training_function` -> `run_pt` / `run_sft` / `run_dpo` / `run_kto` / `run_rm`), with
the YAML read into the same dict `read_args` builds (`hparams/parser.py`, `OmegaConf.load` of the file), and these
changes, each logged:

- `output_dir` = the run directory `<checkpoint root>/<TrainJob name>` (the config's own value is replaced: one
  config file serves many TrainJobs);
- `save_total_limit` is taken out and applied by trainer.checkpoints.rotate (never deletes the newest, the resumed,
  the best or an incomplete checkpoint), `save_on_each_node` is forced off (one shared volume), and
  KUEUE_COHORTS_SAVE_STEPS, when set, becomes `save_strategy: steps` + `save_steps`;
- `resume_from_checkpoint` = the newest complete checkpoint of the run (trainer.checkpoints), or none. LlamaFactory's
  own auto-resume (`hparams/parser.py` `get_train_args`: `get_last_checkpoint(output_dir)`, the highest
  `checkpoint-<N>` whatever its contents) is replaced by "none" so that an incomplete newest checkpoint is never
  loaded;
- trainer.callback.PreemptionCallback is passed in `callbacks` (run_exp appends LlamaFactory's own LogCallback and
  ReporterCallback to the same list and hands it to its `CustomSeq2SeqTrainer` / `CustomTrainer`, subclasses of
  `transformers.Trainer`): SIGTERM saves one complete checkpoint at the next step boundary and stops.
- After a stop on SIGTERM, `_EndOnPreemption` raises `Preempted` from `on_train_end`, so LlamaFactory's
  post-training steps (`trainer.save_model()` of the final model into output_dir, metrics, loss plot, model card;
  `train/sft/workflow.py` after `trainer.train`) do not run: the run is not finished, and a second full save would
  eat the grace period.

Refused at start (exit 2, one message listing every problem): `stage: ppo` (its `CustomPPOTrainer.ppo_train`
raises on `resume_from_checkpoint`, `train/ppo/trainer.py`), `stage: rm` with `finetuning_type` full or freeze
(`get_train_args` drops `resume_from_checkpoint` for it), `use_ray` (training runs in Ray workers, not in this PID 1),
`use_mca` / `use_hyper_parallel` (Megatron-Core and hyper_parallel loops, not the HF Trainer's), `do_train` false.
"""
from __future__ import annotations

import importlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import yaml

from . import checkpoints, preemption

if TYPE_CHECKING:  # annotations only: transformers is imported late, after the SIGTERM latch (trainer/entrypoint.py)
    from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

log = logging.getLogger("kueue_cohorts.trainer")

RESUMABLE_STAGES = ("pt", "sft", "dpo", "kto", "rm")


class Preempted(Exception):
    """Raised out of `trainer.train()` after the SIGTERM checkpoint is complete, to skip LlamaFactory's final save."""


def load_config(path: Path) -> dict[str, Any]:
    """The LlamaFactory config at `path` (YAML mapping, as `llamafactory-cli train` reads it).

    Raises:
        ValueError: the file is missing, unreadable, not YAML, or not a mapping (message names the path).
    """
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(f"KUEUE_COHORTS_RECIPE=llamafactory:{path}: cannot read the config: {err}") from None
    if not isinstance(data, dict):
        raise ValueError(
            f"KUEUE_COHORTS_RECIPE=llamafactory:{path}: the config must be a YAML mapping of LlamaFactory "
            f"arguments, got {type(data).__name__}"
        )
    return data


def config_problems(config: dict[str, Any]) -> list[str]:
    """Why a LlamaFactory config cannot run checkpoint-safe under this runtime; [] when it can.

    Each problem names the key, its value, the rule and the fix.
    """
    problems = []
    stage = config.get("stage", "sft")
    finetuning = config.get("finetuning_type", "lora")
    if stage not in RESUMABLE_STAGES:
        problems.append(
            f"stage={stage!r}: LlamaFactory 0.9.5 cannot resume this stage (train/ppo/trainer.py ppo_train raises on "
            f"resume_from_checkpoint); use one of {', '.join(RESUMABLE_STAGES)}"
        )
    elif stage == "rm" and finetuning in ("full", "freeze"):
        problems.append(
            f"stage='rm' with finetuning_type={finetuning!r}: LlamaFactory drops resume_from_checkpoint for it "
            "(hparams/parser.py get_train_args); use finetuning_type: lora"
        )
    for key, why in (
        ("use_ray", "training runs in Ray workers, not in the container's PID 1 that receives SIGTERM"),
        ("use_mca", "the Megatron-Core loop is not the HF Trainer's and takes no TrainerCallback"),
        ("use_hyper_parallel", "the hyper_parallel loop is not the HF Trainer's"),
    ):
        if config.get(key):
            problems.append(f"{key}={config[key]!r}: {why}; set {key}: false")
    if not config.get("do_train", False):
        problems.append(f"do_train={config.get('do_train')!r}: the runtime runs training; set do_train: true")
    return problems


def prepare(config: dict[str, Any], run_dir: Path, save_steps: Optional[int],
            resume: Optional[checkpoints.Checkpoint]) -> tuple[dict[str, Any], Optional[int]]:
    """The run_exp arguments for this attempt and the save_total_limit our rotation applies.

    Args:
        config: the LlamaFactory config (not modified).
        run_dir: the run directory (becomes output_dir).
        save_steps: KUEUE_COHORTS_SAVE_STEPS, or None to keep the config's save strategy.
        resume: the newest complete checkpoint, or None.
    Returns:
        (args, save_total_limit): args for `run_exp(args=...)`; the config's save_total_limit (None: keep all).
    """
    args = dict(config)
    if str(args.get("output_dir", "")) and Path(str(args["output_dir"])).resolve() != run_dir.resolve():
        log.info("output_dir=%s (the run directory; the config's %r is replaced)", run_dir, args["output_dir"])
    args["output_dir"] = str(run_dir)
    limit = args.pop("save_total_limit", None)
    if args.get("save_on_each_node"):
        log.warning(
            "save_on_each_node=True ignored: %s is one volume shared by every node, so only world rank 0 writes the "
            "shared checkpoint files and rotates", run_dir.parent,
        )
    args["save_on_each_node"] = False
    if save_steps is not None:
        if args.get("save_strategy", "steps") != "steps" or args.get("save_steps") != save_steps:
            log.info("save_strategy=steps, save_steps=%d (KUEUE_COHORTS_SAVE_STEPS overrides the recipe)", save_steps)
        args["save_strategy"] = "steps"
        args["save_steps"] = save_steps
    if args.get("resume_from_checkpoint"):
        log.info("resume_from_checkpoint=%r in the config ignored: the runtime resumes from its own run directory",
                 args["resume_from_checkpoint"])
    args.pop("resume_from_checkpoint", None)
    if resume is not None:
        args["resume_from_checkpoint"] = str(resume.path)
    return args, (int(limit) if limit else None)


def extra_callbacks(spec: str) -> list[TrainerCallback]:
    """The TrainerCallbacks of KUEUE_COHORTS_RECIPE_CALLBACKS=`module:function` (`function() -> list`), [] if unset.

    For callbacks a team passes to `run_exp(callbacks=...)` in its own launcher (and the hold points of the
    tests). Raises ValueError for a malformed spec, ImportError / AttributeError for a missing module or function.
    """
    if not spec:
        return []
    module_name, sep, function_name = spec.partition(":")
    if not sep or not module_name or not function_name:
        raise ValueError(f"KUEUE_COHORTS_RECIPE_CALLBACKS={spec!r} must be 'module:function'")
    return list(getattr(importlib.import_module(module_name), function_name)())


def run(config_path: Path, run_dir: Path, save_steps: Optional[int]) -> int:
    """Run one attempt of a LlamaFactory config. Returns the exit code (0 finished or preempted cleanly, 2 refused).

    Raises whatever LlamaFactory raises while training (exit 1).
    """
    try:
        config = load_config(config_path)
    except ValueError as err:
        log.error("%s", err)
        return 2
    problems = config_problems(config)
    if problems:
        log.error("KUEUE_COHORTS_RECIPE=llamafactory:%s cannot run checkpoint-safe: %s", config_path,
                  "; ".join(problems))
        return 2
    with_optimizer = not config.get("save_only_model", False)
    world_size = max(int(os.environ.get("WORLD_SIZE", "1") or 1), 1)
    resume = checkpoints.newest_complete(run_dir, with_optimizer, world_size)
    args, limit = prepare(config, run_dir, save_steps, resume)
    try:
        extra = extra_callbacks(os.environ.get("KUEUE_COHORTS_RECIPE_CALLBACKS", ""))
    except (ValueError, ImportError, AttributeError) as err:
        log.error("KUEUE_COHORTS_RECIPE_CALLBACKS: %s", err)
        return 2
    if resume is None:
        log.info("no complete checkpoint in %s: starting at global step 0", run_dir)
    else:
        log.info("resuming from %s at global step %d", resume.path, resume.step)
    if preemption.requested():
        log.info("%s arrived before training started: nothing to save, exiting %d", preemption.signal_name(),
                 preemption.PREEMPTED_EXIT_CODE)
        return preemption.PREEMPTED_EXIT_CODE

    from llamafactory.hparams import parser as lf_parser
    from llamafactory.train.tuner import run_exp
    from transformers import TrainerCallback

    from .callback import PreemptionCallback

    # LlamaFactory's auto-resume takes the highest checkpoint-<N> whatever its contents; ours already chose.
    lf_parser.get_last_checkpoint = lambda _output_dir: None

    callback = PreemptionCallback(run_dir, limit, resume.path if resume else None, with_optimizer, world_size)

    class _EndOnPreemption(TrainerCallback):  # type: ignore[misc]  # transformers is not type-checked (pyproject.toml)
        global_step = 0

        def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                         **kwargs: object) -> TrainerControl:
            self.global_step = state.global_step
            if callback.stopped_at_step is not None:
                raise Preempted(callback.stopped_at_step)
            return control

    ender = _EndOnPreemption()

    log.info("LlamaFactory: stage=%s finetuning_type=%s, SIGTERM flushes a checkpoint at the next step boundary",
             args.get("stage", "sft"), args.get("finetuning_type", "lora"))
    try:
        run_exp(args=args, callbacks=[callback, ender, *extra])
    except Preempted:
        _leave_process_group()
        log.info(
            "preempted: stopped at global step %d with checkpoint-%d complete, %.3f s after %s; exiting %d",
            callback.stopped_at_step,
            callback.stopped_at_step,
            preemption.seconds_since_request() or 0.0,
            preemption.signal_name(),
            preemption.PREEMPTED_EXIT_CODE,
        )
        return preemption.PREEMPTED_EXIT_CODE
    log.info("training finished at global step %d", ender.global_step)
    return 0


def _leave_process_group() -> None:
    """Leave torch.distributed's process group after a preempted multi-node run: `Preempted` skipped the
    `destroy_process_group` at the end of LlamaFactory's `_training_function` (train/tuner.py)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
