"""PreemptionCallback: turns the SIGTERM latch into one complete checkpoint at a step boundary and a clean stop.

Hooks into the Hugging Face Trainer's loop (transformers.TrainerCallback; the order within a step is
on_step_end -> [evaluate -> on_evaluate] -> [_save_checkpoint -> on_save] -> stop check):

- signal during a training step: at on_step_end, request a save at this global step, skip a pending evaluation,
  stop after the save;
- signal during an evaluation: the evaluation finishes, on_evaluate requests the save at this step, then stop;
- signal during a save: that save finishes, on_save stops the loop; no second checkpoint is written;
- after every save, on every process: fsync the checkpoint (the "flush": each node flushes its own page cache;
  sharded layouts have every rank write files), then wait for all processes (torch.distributed barrier); then only
  the process that owns the run directory (world rank 0, `TrainerState.is_world_process_zero`) verifies the
  checkpoint is complete and rotates with `trainer.checkpoints.rotate`, which keeps the best checkpoint
  (`TrainerState.best_model_checkpoint`) the way the Trainer does and never deletes the checkpoint just written,
  the one resumed from, or an incomplete one. The Trainer's own rotation is switched off by the entrypoint
  (save_total_limit=None).

In distributed training every rank must stop at the same step: the request is OR-reduced across ranks at each
hook (torch.distributed.all_reduce MAX), so a SIGTERM seen by any pod stops all of them together.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Optional

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from . import checkpoints, preemption

log = logging.getLogger("kueue_cohorts.trainer")


class PreemptionCallback(TrainerCallback):  # type: ignore[misc]  # transformers is not type-checked (pyproject.toml)
    """Save-and-stop on SIGTERM, flush and safe rotation after every save.

    Args:
        run_dir: the run's checkpoint directory (= TrainingArguments.output_dir).
        save_total_limit: the recipe's save_total_limit (None keeps every checkpoint).
        resumed_from: the checkpoint this attempt resumed from (never rotated away), or None.
        with_optimizer: False when the recipe saves only the model (save_only_model).
        world_size: the number of training processes (TrainingArguments.world_size), for the completeness check.
        metrics: a trainer.metrics.TrainerMetrics told every step and every save, or None (no metrics endpoint).
    Attributes after training: `stopped_at_step` (int global step of the checkpoint written because of the
    signal, or None), `saved_steps` (global steps saved in this attempt, in order), `flush_seconds` (seconds per
    save spent in fsync, same order), `last_saved_step`.
    """

    def __init__(
        self,
        run_dir: Path,
        save_total_limit: Optional[int],
        resumed_from: Optional[Path],
        with_optimizer: bool,
        world_size: int = 1,
        metrics: Optional[Any] = None,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.world_size = world_size
        self.save_total_limit = save_total_limit
        self.resumed_from = resumed_from
        self.with_optimizer = with_optimizer
        self.stopped_at_step: Optional[int] = None
        self.last_saved_step: Optional[int] = None
        self.saved_steps: list[int] = []
        self.flush_seconds: list[float] = []
        self.metrics = metrics

    # --- helpers -------------------------------------------------------------------------------------------------

    @staticmethod
    def _requested(args: TrainingArguments) -> bool:
        """The local request, OR-ed over all ranks when torch.distributed runs with more than one process."""
        local = preemption.requested()
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            import torch

            flag = torch.tensor([1 if local else 0], device=args.device)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            if flag.item() and not local:
                preemption.request("SIGTERM on another rank")
                return True
        return local

    @staticmethod
    def _barrier() -> None:
        """Wait for every process (no-op without torch.distributed or with one process)."""
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            dist.barrier()

    # --- TrainerCallback hooks -----------------------------------------------------------------------------------

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                    **kwargs: object) -> TrainerControl:
        """After an optimizer step: on a pending stop, save at this global step, skip evaluation, then stop."""
        if self.metrics is not None:
            self.metrics.step(state.global_step, state.is_world_process_zero)
        if self._requested(args):
            control.should_save = True
            control.should_evaluate = False
            control.should_training_stop = True
        return control

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                    **kwargs: object) -> TrainerControl:
        """After an evaluation: a stop that arrived during it saves at this step (unless already saved), then stops."""
        if self._requested(args) and self.last_saved_step != state.global_step:
            control.should_save = True
            control.should_training_stop = True
        return control

    def on_epoch_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                     **kwargs: object) -> TrainerControl:
        """At an epoch end with a pending stop: save only if this step has no checkpoint yet; never evaluate."""
        if self._requested(args):
            already_saved = self.last_saved_step == state.global_step
            control.should_save = not already_saved
            control.should_evaluate = False
            control.should_training_stop = True
        return control

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                **kwargs: object) -> TrainerControl:
        """After the Trainer wrote checkpoint-<global step>: every process flushes it; after a barrier, world rank 0
        alone checks it and rotates (keeping the best checkpoint); stop if asked to."""
        written = self.run_dir / f"checkpoint-{state.global_step}"
        started = time.perf_counter()
        files = checkpoints.fsync_tree(written) if written.is_dir() else 0
        flushed = time.perf_counter() - started
        self.flush_seconds.append(flushed)
        self._barrier()  # every rank's files are written and flushed before anyone judges the checkpoint
        rotated = ""
        if state.is_world_process_zero:
            problems = checkpoints.completeness_problems(
                checkpoints.Checkpoint(state.global_step, written), self.with_optimizer, self.world_size
            )
            if problems:
                log.error("checkpoint %s is incomplete after the save: %s", written, "; ".join(problems))
            protected = [written] + ([self.resumed_from] if self.resumed_from else [])
            deleted = checkpoints.rotate(
                self.run_dir, self.save_total_limit, protected, self.with_optimizer, state.best_model_checkpoint,
                self.world_size,
            )
            if deleted:
                rotated = f"; rotated away {', '.join(p.name for p in deleted)}"
        log.info(
            "saved %s at global step %d: %d files flushed in %.4f s%s",
            written.name,
            state.global_step,
            files,
            flushed,
            rotated,
        )
        self.last_saved_step = state.global_step
        self.saved_steps.append(state.global_step)
        if self.metrics is not None:
            self.metrics.saved(state.global_step, flushed, state.is_world_process_zero)
        if self._requested(args):
            self.stopped_at_step = state.global_step
            control.should_training_stop = True
        return control
