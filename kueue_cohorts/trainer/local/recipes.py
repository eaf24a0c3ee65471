"""The recipe of local runs (the trainer tests, the trainer benchmark): the demo recipe plus a hold point where the
caller delivers SIGTERM.

Each hold prints `HOLD <where> <global step>` to stderr and then blocks until the entrypoint's SIGTERM latch is
set (the caller sends the signal from outside, as the kubelet would), so the signal lands exactly mid-step,
mid-evaluation or mid-save without any timing guesswork. Selected by KUEUE_COHORTS_TEST_HOLD=<where>:<step> with
<where> one of step | eval | save. A hold that never sees the signal fails the run after 120 s.

Two more knobs: KUEUE_COHORTS_TEST_EVAL_LOSS="<step>:<loss>,..." replaces the evaluation's eval_loss at those global
steps by the given values (so a test decides which checkpoint is the best one), and
KUEUE_COHORTS_TEST_SAVE_ON_EACH_NODE=1 sets TrainingArguments.save_on_each_node, as a recipe written for node-local
disks would.
"""
from __future__ import annotations

import importlib
import os
import sys
import time
from typing import Any

from transformers import Trainer, TrainerCallback, TrainerControl, TrainerState, TrainingArguments

_TRAINER = __name__.removesuffix(".local.recipes").removesuffix(".local_recipes")
"""The trainer package this module runs beside: `kueue_cohorts.trainer` on the host (kueue_cohorts/trainer/local/),
`trainer` where a test ships this file in the runtime's ConfigMap as `trainer/local_recipes.py`
(tests/trainer/test_runtime_process.py). Its hold must read the SIGTERM latch of the entrypoint that runs it, never a
second copy of the package's modules."""
demo = importlib.import_module(f"{_TRAINER}.demo")
preemption = importlib.import_module(f"{_TRAINER}.preemption")


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


class _HoldInStep(TrainerCallback):  # type: ignore[misc]  # transformers is not type-checked (pyproject.toml)
    """Blocks inside optimizer step N+1's first micro-batch (after step N ended), i.e. in the middle of a step."""

    def __init__(self, after_step: int) -> None:
        self.after_step = after_step

    def on_step_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                      **kwargs: object) -> TrainerControl:
        if state.global_step == self.after_step:
            _hold("step", state.global_step)
        return control


class _HoldInEvaluation(TrainerCallback):  # type: ignore[misc]  # transformers is not type-checked (pyproject.toml)
    """Blocks at the first prediction step of the evaluation that runs after step N."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.done = False

    def on_prediction_step(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                           **kwargs: object) -> TrainerControl:
        if state.global_step == self.step and not self.done:
            self.done = True
            _hold("eval", state.global_step)
        return control


class _HoldInSaveTrainer(Trainer):  # type: ignore[misc]  # transformers is not type-checked (pyproject.toml)
    """Blocks in the middle of checkpoint N's save: weights written, optimizer and trainer state not yet."""

    hold_step = -1

    def _save_optimizer_and_scheduler(self, output_dir: str) -> None:
        if self.state.global_step == self.hold_step:
            _hold("save", self.state.global_step)
        super()._save_optimizer_and_scheduler(output_dir)


class _ScriptedEvalLossTrainer(Trainer):  # type: ignore[misc]  # transformers is not type-checked (pyproject.toml)
    """Reports a scripted eval_loss at chosen global steps (KUEUE_COHORTS_TEST_EVAL_LOSS), the real one elsewhere."""

    scripted: dict[int, float] = {}

    def evaluate(self, *args: object, **kwargs: object) -> dict[str, float]:
        metrics: dict[str, float] = super().evaluate(*args, **kwargs)
        if self.state.global_step in self.scripted:
            metrics["eval_loss"] = self.scripted[self.state.global_step]
        return metrics


def _scripted_losses() -> dict[int, float]:
    text = os.environ.get("KUEUE_COHORTS_TEST_EVAL_LOSS", "")
    return {int(step): float(loss) for step, _, loss in (item.partition(":") for item in text.split(",") if item)}


def build_trainer(output_dir: str) -> Trainer:
    """The demo recipe with the hold point of KUEUE_COHORTS_TEST_HOLD (none when unset) and the other test knobs."""
    where, step = _hold_point()
    callbacks: list[TrainerCallback] = []
    bases: tuple[type[Trainer], ...] = ()
    attributes: dict[str, Any] = {}
    if where == "step":
        callbacks.append(_HoldInStep(step))
    elif where == "eval":
        callbacks.append(_HoldInEvaluation(step))
    elif where == "save":
        bases += (_HoldInSaveTrainer,)
        attributes["hold_step"] = step
    if _scripted_losses():
        bases += (_ScriptedEvalLossTrainer,)
        attributes["scripted"] = _scripted_losses()
    trainer_class = type("TestTrainer", bases, attributes) if bases else Trainer
    trainer = demo.build_trainer(output_dir, callbacks=callbacks or None, trainer_class=trainer_class)
    if os.environ.get("KUEUE_COHORTS_TEST_SAVE_ON_EACH_NODE") == "1":
        trainer.args.save_on_each_node = True
    return trainer
