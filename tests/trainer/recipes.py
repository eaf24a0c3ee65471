"""Recipes for the trainer tests: the demo recipe plus a hold point where the test delivers SIGTERM.

Each hold prints `HOLD <where> <global step>` to stderr and then blocks until the entrypoint's SIGTERM latch is
set (the test sends the signal from outside, as the kubelet would), so the signal lands exactly mid-step,
mid-evaluation or mid-save without any timing guesswork. Selected by KUEUE_COHORTS_TEST_HOLD=<where>:<step> with
<where> one of step | eval | save. A hold that never sees the signal fails the run after 120 s.
"""
from __future__ import annotations

import os
import sys
import time

from transformers import Trainer, TrainerCallback

from trainer import demo, preemption


def _hold(where: str, step: int) -> None:
    sys.stderr.write(f"HOLD {where} {step}\n")
    sys.stderr.flush()
    deadline = time.monotonic() + 120
    while not preemption.requested():
        if time.monotonic() > deadline:
            raise TimeoutError(f"held at {where} {step} for 120 s without SIGTERM")
        time.sleep(0.01)


def _hold_point() -> tuple[str, int]:
    where, _, step = os.environ.get("KUEUE_COHORTS_TEST_HOLD", ":").partition(":")
    return where, int(step) if step else -1


class _HoldInStep(TrainerCallback):
    """Blocks inside optimizer step N+1's first micro-batch (after step N ended), i.e. in the middle of a step."""

    def __init__(self, after_step: int):
        self.after_step = after_step

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == self.after_step:
            _hold("step", state.global_step)
        return control


class _HoldInEvaluation(TrainerCallback):
    """Blocks at the first prediction step of the evaluation that runs after step N."""

    def __init__(self, step: int):
        self.step = step
        self.done = False

    def on_prediction_step(self, args, state, control, **kwargs):
        if state.global_step == self.step and not self.done:
            self.done = True
            _hold("eval", state.global_step)
        return control


class _HoldInSaveTrainer(Trainer):
    """Blocks in the middle of checkpoint N's save: weights written, optimizer and trainer state not yet."""

    hold_step = -1

    def _save_optimizer_and_scheduler(self, output_dir):
        if self.state.global_step == self.hold_step:
            _hold("save", self.state.global_step)
        return super()._save_optimizer_and_scheduler(output_dir)


def build_trainer(output_dir: str) -> Trainer:
    """The demo recipe with the hold point of KUEUE_COHORTS_TEST_HOLD (none when unset)."""
    where, step = _hold_point()
    if where == "step":
        return demo.build_trainer(output_dir, callbacks=[_HoldInStep(step)])
    if where == "eval":
        return demo.build_trainer(output_dir, callbacks=[_HoldInEvaluation(step)])
    if where == "save":
        trainer_class = type("HoldInSave", (_HoldInSaveTrainer,), {"hold_step": step})
        return demo.build_trainer(output_dir, trainer_class=trainer_class)
    return demo.build_trainer(output_dir)
