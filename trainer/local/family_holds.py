"""Hold points for recipe-family runs (trainer.recipes).

Selected by `KUEUE_COHORTS_RECIPE_CALLBACKS=trainer.local.family_holds:callbacks`.

A family recipe is the user's config, not a Python function that builds a Trainer, so the hold point of the tests and
the benchmark comes in as an extra TrainerCallback: KUEUE_COHORTS_TEST_HOLD=step:<N> blocks inside optimizer step N+1
until the SIGTERM latch is set (trainer.local.recipes), so the signal lands mid-step without timing guesses.
"""
from __future__ import annotations

from trainer.local.recipes import _hold_point, _HoldInStep


def callbacks() -> list:
    """[the step hold of KUEUE_COHORTS_TEST_HOLD] or [] when it is unset or not a step hold."""
    where, step = _hold_point()
    return [_HoldInStep(step)] if where == "step" else []
