"""LlamaFactory 0.9.5 under the runtime (`KUEUE_COHORTS_RECIPE=llamafactory:<config.yaml>`), in its own venv
(requirements-recipe-llamafactory.txt, `make recipe-deps`), with a tiny Llama built locally
(trainer/local/tiny_llamafactory.py), preempted by SIGTERM from outside at seeded steps, as the kubelet sends it."""
from __future__ import annotations

import random
import signal
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from kueue_cohorts.trainer import checkpoints, preemption
from kueue_cohorts.trainer import recipe_llamafactory as llamafactory
from kueue_cohorts.trainer.local import families

MAX_STEPS, SAVE_STEPS = 30, 10


@pytest.fixture(scope="module")
def python() -> str:
    """The LlamaFactory venv's interpreter; the suite fails (never skips) without it."""
    path = families.llamafactory_python()
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make recipe-deps` (requirements-recipe-llamafactory.txt)", pytrace=False)
    return str(path)


def project(python: str, directory: Path, **knobs) -> Path:
    return families.build_llamafactory_project(directory, **knobs)


def start(python: str, root: Path, run: str, config: Path, **env: str):
    return families.start_llamafactory(root, run, config, **env)


def weights(path: Path, name: str = "model.safetensors") -> dict[str, torch.Tensor]:
    return load_file(str(path / name))


def seeded_holds(seed: int) -> list[int]:
    """Three hold steps, strictly increasing, each before the next attempt's resume point, all before MAX_STEPS."""
    rng = random.Random(seed)
    first = rng.randrange(1, 9)
    second = rng.randrange(first + 2, 19)
    return [first, second, rng.randrange(second + 2, MAX_STEPS - 1)]


@pytest.mark.parametrize("seed", [3])
def test_preempted_three_times_at_seeded_steps_loses_no_step_and_ends_with_the_uninterrupted_weights(
        python, tmp_path, seed):
    config = project(python, tmp_path / "project", max_steps=MAX_STEPS, save_steps=SAVE_STEPS, save_total_limit=2)
    reference = start(python, tmp_path, "reference", config)  # uninterrupted, same seed, runs alongside
    run_dir = tmp_path / "preempted"
    resumed_from = 0
    for hold in seeded_holds(seed):
        attempt = start(python, tmp_path, "preempted", config, KUEUE_COHORTS_TEST_HOLD=f"step:{hold}")
        attempt.wait_for(rf"^HOLD step {hold}$", timeout=600)  # inside optimizer step hold+1
        attempt.send(signal.SIGTERM)
        assert attempt.wait(timeout=600) == preemption.PREEMPTED_EXIT_CODE, attempt.log()
        lines = attempt.ours()
        if resumed_from:
            assert f"resuming from {run_dir / f'checkpoint-{resumed_from}'} at global step {resumed_from}" in lines
        stopped = hold + 1
        assert any(line.startswith(f"preempted: stopped at global step {stopped} with checkpoint-{stopped} complete")
                   for line in lines), attempt.log()
        assert checkpoints.newest_complete(run_dir).step == stopped  # 0 steps lost: the next attempt starts here
        assert not (run_dir / "model.safetensors").exists()  # LlamaFactory's final save did not run
        resumed_from = stopped
    final = start(python, tmp_path, "preempted", config)
    assert final.wait(timeout=600) == 0, final.log()
    assert f"resuming from {run_dir / f'checkpoint-{resumed_from}'} at global step {resumed_from}" in final.ours()
    assert f"training finished at global step {MAX_STEPS}" in final.ours()
    assert (run_dir / "model.safetensors").exists()  # a finished run gets LlamaFactory's final save
    # rotation (save_total_limit 2): the newest and the resumed-from checkpoint stay, every other periodic one goes
    assert [c.step for c in checkpoints.list_checkpoints(run_dir)] == [resumed_from, MAX_STEPS]

    assert reference.wait(timeout=600) == 0, reference.log()
    expected, actual = weights(tmp_path / "reference" / f"checkpoint-{MAX_STEPS}"), weights(
        run_dir / f"checkpoint-{MAX_STEPS}")
    assert expected.keys() == actual.keys()
    for name in expected:
        assert torch.equal(expected[name], actual[name]), name


def test_lora_preempted_mid_step_resumes_the_adapter_to_the_uninterrupted_weights(python, tmp_path):
    config = project(python, tmp_path / "project", max_steps=20, save_steps=SAVE_STEPS, save_total_limit=2,
                     finetuning_type="lora")
    reference = start(python, tmp_path, "reference", config)
    first = start(python, tmp_path, "run", config, KUEUE_COHORTS_TEST_HOLD="step:4")
    first.wait_for(r"^HOLD step 4$", timeout=600)
    first.send(signal.SIGTERM)
    assert first.wait(timeout=600) == preemption.PREEMPTED_EXIT_CODE, first.log()
    run_dir = tmp_path / "run"
    assert checkpoints.detect_layout(run_dir / "checkpoint-5") == "single"
    assert (run_dir / "checkpoint-5" / "adapter_model.safetensors").exists()
    assert checkpoints.newest_complete(run_dir).step == 5
    second = start(python, tmp_path, "run", config)
    assert second.wait(timeout=600) == 0, second.log()
    assert f"resuming from {run_dir / 'checkpoint-5'} at global step 5" in second.ours()
    assert reference.wait(timeout=600) == 0, reference.log()
    expected = weights(tmp_path / "reference" / "checkpoint-20", "adapter_model.safetensors")
    actual = weights(run_dir / "checkpoint-20", "adapter_model.safetensors")
    assert expected.keys() == actual.keys() and expected
    for name in expected:
        assert torch.equal(expected[name], actual[name]), name


def test_an_incomplete_newest_checkpoint_is_skipped_not_loaded_by_llamafactorys_auto_resume(python, tmp_path):
    config = project(python, tmp_path / "project", max_steps=20, save_steps=SAVE_STEPS, save_total_limit=None)
    first = start(python, tmp_path, "run", config, KUEUE_COHORTS_TEST_HOLD="step:12")
    first.wait_for(r"^HOLD step 12$", timeout=600)
    first.send(signal.SIGTERM)
    assert first.wait(timeout=600) == preemption.PREEMPTED_EXIT_CODE, first.log()
    run_dir = tmp_path / "run"
    (run_dir / "checkpoint-13" / "optimizer.pt").write_bytes(b"")  # a save killed while writing the optimizer
    (run_dir / "checkpoint-15").mkdir()  # LlamaFactory's get_last_checkpoint would pick this one
    (run_dir / "checkpoint-15" / "config.json").write_text("{}")
    second = start(python, tmp_path, "run", config)
    assert second.wait(timeout=600) == 0, second.log()
    lines = second.ours()
    assert any(line.startswith(f"skipping incomplete checkpoint {run_dir / 'checkpoint-15'} (kept, not deleted)")
               for line in lines), lines
    assert any(line.startswith(f"skipping incomplete checkpoint {run_dir / 'checkpoint-13'}")
               and "optimizer.pt is missing or empty" in line for line in lines), lines
    assert f"resuming from {run_dir / 'checkpoint-10'} at global step 10" in lines
    assert "training finished at global step 20" in lines


def test_only_incomplete_checkpoints_start_at_step_0_instead_of_loading_one(python, tmp_path):
    """With no complete checkpoint the runtime passes no resume_from_checkpoint, so LlamaFactory's own auto-resume
    (get_last_checkpoint: the highest checkpoint-<N>, whatever it holds) must not pick the broken one."""
    config = project(python, tmp_path / "project", max_steps=10, save_steps=SAVE_STEPS, save_total_limit=None)
    run_dir = tmp_path / "run"
    (run_dir / "checkpoint-7").mkdir(parents=True)  # a save killed right after writing the weights' config
    (run_dir / "checkpoint-7" / "config.json").write_text("{}")
    (run_dir / "checkpoint-7" / "trainer_state.json").write_text('{"global_step": 7}')
    process = start(python, tmp_path, "run", config)
    assert process.wait(timeout=600) == 0, process.log()
    lines = process.ours()
    assert any(line.startswith(f"skipping incomplete checkpoint {run_dir / 'checkpoint-7'} (kept, not deleted)")
               for line in lines), lines
    assert f"no complete checkpoint in {run_dir}: starting at global step 0" in lines
    assert "training finished at global step 10" in lines
    assert sorted(p.name for p in (run_dir / "checkpoint-7").iterdir()) == ["config.json", "trainer_state.json"]


@pytest.mark.parametrize("config, keys", [
    ({"stage": "ppo", "do_train": True}, ["stage='ppo'"]),
    ({"stage": "rm", "finetuning_type": "full", "do_train": True}, ["stage='rm' with finetuning_type='full'"]),
    ({"stage": "rm", "finetuning_type": "freeze", "do_train": True, "use_ray": True},
     ["stage='rm' with finetuning_type='freeze'", "use_ray=True"]),
    ({"stage": "sft", "use_mca": True, "use_hyper_parallel": True},
     ["use_mca=True", "use_hyper_parallel=True", "do_train=None"]),
])
def test_configs_that_cannot_resume_are_refused_with_every_problem(config, keys):
    problems = llamafactory.config_problems(config)
    assert len(problems) == len(keys)
    for problem, key in zip(problems, keys, strict=True):
        assert problem.startswith(key + ":"), problems


def test_sft_lora_and_pt_configs_pass():
    for stage in ("pt", "sft", "dpo", "kto"):
        assert llamafactory.config_problems({"stage": stage, "do_train": True, "finetuning_type": "lora"}) == []
    assert llamafactory.config_problems({"stage": "rm", "do_train": True, "finetuning_type": "lora"}) == []


def test_prepare_points_output_at_the_run_directory_and_takes_over_rotation_and_resume(tmp_path):
    config = {"output_dir": "saves/x", "save_total_limit": 3, "save_on_each_node": True, "save_steps": 50,
              "resume_from_checkpoint": "saves/x/checkpoint-7", "stage": "sft"}
    resume = checkpoints.Checkpoint(20, tmp_path / "checkpoint-20")
    args, limit = llamafactory.prepare(config, tmp_path, 5, resume)
    assert limit == 3 and "save_total_limit" not in args
    assert args["output_dir"] == str(tmp_path) and args["save_on_each_node"] is False
    assert args["save_strategy"] == "steps" and args["save_steps"] == 5
    assert args["resume_from_checkpoint"] == str(tmp_path / "checkpoint-20")
    args, limit = llamafactory.prepare(config, tmp_path, None, None)
    assert "resume_from_checkpoint" not in args and args["save_steps"] == 50 and limit == 3
    assert config["output_dir"] == "saves/x"  # the caller's dict is not changed
