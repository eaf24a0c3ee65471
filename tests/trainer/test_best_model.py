"""The best-model recipe (trainer.demo with KUEUE_COHORTS_DEMO_BEST_MODEL=1: evaluation at every save,
load_best_model_at_end) preempted twice: the best checkpoint survives every rotation and is the one loaded at the end.

The evaluation loss is scripted at the periodic saves (trainer/local/recipes.py) so that checkpoint-10 is the best and
every later one is worse: the case where the Trainer's rotation keeps one checkpoint more than save_total_limit."""
from __future__ import annotations

import json
import signal

from kueue_cohorts.trainer.entrypoint import PREEMPTED_EXIT_CODE
from kueue_cohorts.trainer.local.process import run, start
from tests.trainer.test_preemption import complete, saves_after_signal, steps

BEST = {
    "KUEUE_COHORTS_DEMO_MAX_STEPS": "40",
    "KUEUE_COHORTS_DEMO_SAVE_STEPS": "10",
    "KUEUE_COHORTS_DEMO_SAVE_TOTAL_LIMIT": "1",
    "KUEUE_COHORTS_DEMO_BEST_MODEL": "1",
    "KUEUE_COHORTS_TEST_EVAL_LOSS": "10:0.1,20:0.5,30:0.4,40:0.3",
}


def best_of(run_dir, step: int) -> str | None:
    state = json.loads((run_dir / f"checkpoint-{step}" / "trainer_state.json").read_text())
    return state["best_model_checkpoint"]


def preempt(root, run_name: str, hold_step: int, **env):
    process = start(root, run_name, KUEUE_COHORTS_TEST_HOLD=f"step:{hold_step}", **env)
    process.wait_for(rf"^HOLD step {hold_step}$")
    process.send(signal.SIGTERM)
    assert process.wait() == PREEMPTED_EXIT_CODE, process.log()
    return process


def test_best_checkpoint_survives_rotation_through_two_preemptions(tmp_path):
    run_dir = tmp_path / "best"
    best = str(run_dir / "checkpoint-10")

    first = preempt(tmp_path, "best", 14, **BEST)  # checkpoint-10 (best, eval 0.1), then SIGTERM inside step 15
    assert saves_after_signal(first.ours()) == ["checkpoint-15"]
    # limit 1, best (10) is not the newest (15): two are kept, as the Trainer keeps them
    assert steps(run_dir) == [10, 15]
    assert best_of(run_dir, 15) == best

    second = preempt(tmp_path, "best", 26, **BEST)  # resumes at 15, saves 20 (eval 0.5), SIGTERM inside step 27
    assert f"resuming from {run_dir / 'checkpoint-15'} at global step 15" in second.ours()
    assert saves_after_signal(second.ours()) == ["checkpoint-27"]
    assert steps(run_dir) == [10, 15, 27]  # 20 rotated away; 15 kept: this attempt resumed from it
    assert best_of(run_dir, 27) == best

    last = run(tmp_path, "best", **BEST)  # resumes at 27, saves 30 (0.4) and 40 (0.3), loads the best at the end
    assert f"resuming from {run_dir / 'checkpoint-27'} at global step 27" in last.ours()
    assert "training finished at global step 40" in last.ours()
    assert steps(run_dir) == [10, 27, 40]
    assert best_of(run_dir, 40) == best
    assert all(complete(run_dir, step) for step in (10, 27, 40))
