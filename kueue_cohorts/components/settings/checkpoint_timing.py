"""Checkpoint planning for preemptible training: how often to save, and how long the kubelet must wait.

Two numbers bound what a preempted TrainJob can lose:

- on a graceful stop (Kueue preemption, node drain: SIGTERM, then SIGKILL after terminationGracePeriodSeconds) the
  entrypoint saves at the next step boundary, so nothing is lost if the grace period covers one step plus one save
  (`grace_period_seconds`);
- on a hard stop (SIGKILL, node crash, a grace period that ran out) the run falls back to its last periodic
  checkpoint, so the loss is at most save_steps x seconds per step (`save_steps`). A grace period not longer than
  one save is the rule book's `checkpoint_safe_runtime` finding.

Our guide's figures: 5 s per step and save_steps 100 bound the hard-stop loss at 500 s (about 8 minutes).
Kubernetes fields: core/v1 PodSpec.terminationGracePeriodSeconds (int64 seconds); Hugging Face
TrainingArguments.save_steps (optimizer steps).
"""
from __future__ import annotations

import math


class PlanningError(ValueError):
    """A planning input is unusable; the message names the value, the rule and the fix."""


def _positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise PlanningError(f"{name} = {value!r}: must be a positive finite number of seconds. Fix: measure it.")


def save_steps(max_lost_seconds: float, seconds_per_step: float) -> int:
    """The largest save interval (in optimizer steps) whose hard-stop loss stays within a budget.

    Args:
        max_lost_seconds: the most training time (seconds) a hard stop may lose.
        seconds_per_step: wall-clock seconds of one optimizer step (measured, per node).
    Returns:
        floor(max_lost_seconds / seconds_per_step), an int >= 1 (for TrainingArguments.save_steps).
        Example: save_steps(500, 5) == 100 (the guide: about 8 minutes).
    Raises:
        PlanningError: a non-positive input, or a budget shorter than one step (no interval can meet it).
    """
    _positive("max_lost_seconds", max_lost_seconds)
    _positive("seconds_per_step", seconds_per_step)
    steps = math.floor(max_lost_seconds / seconds_per_step + 1e-9)
    if steps < 1:
        raise PlanningError(
            f"max_lost_seconds = {max_lost_seconds!r}: a budget shorter than one step ({seconds_per_step} s) "
            "cannot be met. Fix: raise the budget to at least one step, or make steps shorter."
        )
    return steps


def grace_period_seconds(checkpoint_save_seconds: float, seconds_per_step: float, floor_seconds: int = 0) -> int:
    """terminationGracePeriodSeconds that lets a SIGTERM'd trainer finish its step and write its checkpoint.

    Args:
        checkpoint_save_seconds: seconds to write and flush one complete checkpoint (weights, optimizer, state).
        seconds_per_step: seconds of one optimizer step (the signal may land at the start of one).
        floor_seconds: a lower bound, e.g. the policy pack's minTerminationGracePeriodSeconds (default 0: none).
    Returns:
        max(ceil(checkpoint_save_seconds + seconds_per_step), floor_seconds), int seconds.
        Examples: (30, 5) -> 35; (30, 5, floor_seconds=60) -> 60; (120, 10, 60) -> 130.
    Raises:
        PlanningError: a non-positive save or step time, or a negative floor.
    """
    _positive("checkpoint_save_seconds", checkpoint_save_seconds)
    _positive("seconds_per_step", seconds_per_step)
    if isinstance(floor_seconds, bool) or not isinstance(floor_seconds, int) or floor_seconds < 0:
        raise PlanningError(f"floor_seconds = {floor_seconds!r}: must be a non-negative integer. Fix: use 0 for none.")
    return max(math.ceil(checkpoint_save_seconds + seconds_per_step - 1e-9), floor_seconds)

