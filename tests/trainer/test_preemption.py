"""The entrypoint with the real Hugging Face Trainer on CPU (tiny GPT-2 from a config, synthetic tokens), run as a
separate process that receives SIGTERM from outside, as the kubelet sends it."""
from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import torch
from safetensors.torch import load_file

from kueue_cohorts.trainer import checkpoints
from kueue_cohorts.trainer.entrypoint import PREEMPTED_EXIT_CODE
from kueue_cohorts.trainer.local.process import run, start

KNOBS = {
    "KUEUE_COHORTS_DEMO_MAX_STEPS": "30",
    "KUEUE_COHORTS_DEMO_SAVE_STEPS": "10",
    "KUEUE_COHORTS_DEMO_SAVE_TOTAL_LIMIT": "2",
}


def steps(run_dir: Path) -> list[int]:
    return [c.step for c in checkpoints.list_checkpoints(run_dir)]


def complete(run_dir: Path, step: int) -> bool:
    return checkpoints.is_complete(checkpoints.Checkpoint(step, run_dir / f"checkpoint-{step}"))


def global_step(run_dir: Path, step: int) -> int:
    return json.loads((run_dir / f"checkpoint-{step}" / "trainer_state.json").read_text())["global_step"]


def saves_after_signal(lines: list[str]) -> list[str]:
    """The checkpoints the entrypoint saved after it logged the SIGTERM."""
    (index,) = [i for i, line in enumerate(lines) if line.startswith("SIGTERM received")]
    return [m.group(1) for line in lines[index:] if (m := re.match(r"saved (checkpoint-\d+) ", line))]


def weights(path: Path) -> dict[str, torch.Tensor]:
    return load_file(str(path / "model.safetensors"))


def test_sigterm_mid_step_checkpoints_that_step_exits_75_and_resumes_to_the_same_weights(tmp_path):
    reference = start(tmp_path, "reference", **KNOBS)  # uninterrupted, same seed, runs alongside
    preempted = start(tmp_path, "preempted", KUEUE_COHORTS_TEST_HOLD="step:12", **KNOBS)
    preempted.wait_for(r"^HOLD step 12$")  # inside step 13, after checkpoint-10
    preempted.send(signal.SIGTERM)
    assert preempted.wait() == PREEMPTED_EXIT_CODE, preempted.log()
    run_dir = tmp_path / "preempted"
    assert "preempted: stopped at global step 13 with checkpoint-13 complete" in " ".join(preempted.ours())
    assert saves_after_signal(preempted.ours()) == ["checkpoint-13"]
    assert steps(run_dir) == [10, 13]
    assert complete(run_dir, 13) and global_step(run_dir, 13) == 13

    resumed = run(tmp_path, "preempted", **KNOBS)
    assert f"resuming from {run_dir / 'checkpoint-13'} at global step 13" in resumed.ours()
    assert "training finished at global step 30" in resumed.ours()
    # save_total_limit 2, counted the Trainer's way (issue 16: the protected checkpoints count toward the limit):
    # checkpoint-13 (resumed from) and checkpoint-30 (just written) are kept, so checkpoint-20 is rotated away.
    assert steps(run_dir) == [13, 30]

    assert reference.wait() == 0, reference.log()
    assert steps(tmp_path / "reference") == [20, 30]
    expected, actual = weights(tmp_path / "reference" / "checkpoint-30"), weights(run_dir / "checkpoint-30")
    assert expected.keys() == actual.keys()
    for name in expected:
        assert torch.equal(expected[name], actual[name]), name


def test_sigterm_during_evaluation_checkpoints_that_step_once(tmp_path):
    process = start(tmp_path, "run", KUEUE_COHORTS_TEST_HOLD="eval:15", KUEUE_COHORTS_DEMO_EVAL_STEPS="5", **KNOBS)
    process.wait_for(r"^HOLD eval 15$")
    process.send(signal.SIGTERM)
    assert process.wait() == PREEMPTED_EXIT_CODE, process.log()
    run_dir = tmp_path / "run"
    assert saves_after_signal(process.ours()) == ["checkpoint-15"]
    assert steps(run_dir) == [10, 15]
    assert complete(run_dir, 15)
    assert "preempted: stopped at global step 15 with checkpoint-15 complete" in " ".join(process.ours())


def test_sigterm_during_a_save_finishes_that_save_and_writes_no_other(tmp_path):
    process = start(tmp_path, "run", KUEUE_COHORTS_TEST_HOLD="save:20", **KNOBS)
    process.wait_for(r"^HOLD save 20$")  # weights of checkpoint-20 written, optimizer and state not yet
    process.send(signal.SIGTERM)
    assert process.wait() == PREEMPTED_EXIT_CODE, process.log()
    run_dir = tmp_path / "run"
    assert saves_after_signal(process.ours()) == ["checkpoint-20"]
    assert steps(run_dir) == [10, 20]
    assert complete(run_dir, 20) and global_step(run_dir, 20) == 20
    assert "preempted: stopped at global step 20 with checkpoint-20 complete" in " ".join(process.ours())


def test_incomplete_newest_checkpoints_are_skipped_with_a_log_line_and_kept(tmp_path):
    knobs = {**KNOBS, "KUEUE_COHORTS_DEMO_SAVE_TOTAL_LIMIT": "0", "KUEUE_COHORTS_DEMO_MAX_STEPS": "20"}
    run(tmp_path, "run", **knobs)
    run_dir = tmp_path / "run"
    assert steps(run_dir) == [10, 20]
    (run_dir / "checkpoint-20" / "model.safetensors").write_bytes(b"")  # a save killed while writing weights
    (run_dir / "checkpoint-25").mkdir()  # a save killed right after mkdir
    (run_dir / "checkpoint-25" / "config.json").write_text("{}")

    resumed = run(tmp_path, "run", **{**knobs, "KUEUE_COHORTS_DEMO_MAX_STEPS": "30"})
    lines = resumed.ours()
    assert any(line.startswith(f"skipping incomplete checkpoint {run_dir / 'checkpoint-25'} (kept, not deleted)")
               and "trainer_state.json is missing" in line for line in lines), lines
    assert any(line.startswith(f"skipping incomplete checkpoint {run_dir / 'checkpoint-20'}")
               and "model.safetensors is empty" in line for line in lines), lines
    assert f"resuming from {run_dir / 'checkpoint-10'} at global step 10" in lines
    assert "training finished at global step 30" in lines
    assert sorted(p.name for p in (run_dir / "checkpoint-25").iterdir()) == ["config.json"]  # never deleted
    assert steps(run_dir) == [10, 20, 25, 30]


def test_another_runs_checkpoints_in_the_root_are_ignored(tmp_path):
    other = tmp_path / "other-trainjob" / "checkpoint-50"
    other.mkdir(parents=True)
    for name in ("model.safetensors", "training_args.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth"):
        (other / name).write_bytes(b"not loadable: resuming from it would fail")
    (other / "trainer_state.json").write_text(json.dumps({"global_step": 50}))
    (tmp_path / "checkpoint-99").mkdir()  # stray checkpoint at the root itself
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}

    process = run(tmp_path, "mine", **{**KNOBS, "KUEUE_COHORTS_DEMO_MAX_STEPS": "10",
                                        "KUEUE_COHORTS_DEMO_SAVE_STEPS": "5",
                                        "KUEUE_COHORTS_DEMO_SAVE_TOTAL_LIMIT": "1"})
    assert f"no complete checkpoint in {tmp_path / 'mine'}: starting at global step 0" in process.ours()
    assert steps(tmp_path / "mine") == [10]  # rotation (limit 1) removed mine/checkpoint-5 only
    after = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if not p.is_relative_to(tmp_path / "mine")}
    assert after == {p: t for p, t in before.items()}
