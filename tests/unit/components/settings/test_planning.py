"""components.settings.checkpoint_timing: save_steps from a lost-work budget, grace period from save time plus one
step."""
import pytest

from kueue_cohorts.components.settings import checkpoint_timing as planning


@pytest.mark.parametrize(
    "budget, step, expected",
    [
        (500, 5, 100),  # the guide: 5 s per step, save_steps 100 bounds the loss at about 8 minutes
        (480, 5, 96),  # exactly 8 minutes
        (5, 5, 1),  # a budget of one step saves every step
        (9.99, 5, 1),
        (1, 0.25, 4),
        (0.3, 0.1, 3),  # float division must not round 2.9999 down to 2
    ],
)
def test_save_steps_is_the_largest_interval_within_the_budget(budget, step, expected):
    assert planning.save_steps(budget, step) == expected
    assert expected * step <= budget + 1e-9  # a hard stop loses at most save_steps x seconds per step
    assert (expected + 1) * step > budget


@pytest.mark.parametrize("budget, step", [(4, 5), (0, 5), (-1, 5), (500, 0), (500, -5), (float("nan"), 5),
                                          (float("inf"), 5), (True, 5)])
def test_save_steps_refuses_impossible_or_nonsense_inputs(budget, step):
    with pytest.raises(planning.PlanningError) as err:
        planning.save_steps(budget, step)
    assert "Fix:" in str(err.value)


@pytest.mark.parametrize("save, step, expected", [(30, 5, 35), (30.2, 5, 36), (0.5, 0.5, 1), (55, 5, 60)])
def test_grace_period_covers_one_step_plus_one_save(save, step, expected):
    assert planning.grace_period_seconds(save, step) == expected
    assert expected > save  # longer than one save: the rule book's checkpoint_safe_runtime accepts it


def test_grace_period_floor_applies_only_when_save_plus_step_is_shorter():
    assert planning.grace_period_seconds(30, 5, floor_seconds=60) == 60
    assert planning.grace_period_seconds(120, 10, floor_seconds=60) == 130
    with pytest.raises(planning.PlanningError):
        planning.grace_period_seconds(30, 5, floor_seconds=-1)
