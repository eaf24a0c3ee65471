"""training_hub and mini_trainer under the runtime: refused with the reason on a node without CUDA (every node of
this suite), and mini_trainer's full-state checkpoints judged by the runtime's completeness rules."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.trainer import recipe_native as native
from kueue_cohorts.trainer import recipes
from kueue_cohorts.trainer.local.process import run as run_ok
from kueue_cohorts.trainer.local.process import start

WORLD = 2


def write_full_state(output_dir: Path, step: int, world_size: int = WORLD) -> Path:
    """A full-state checkpoint with every file FullStateCheckpointer.save writes (mini_trainer 0.9.0)."""
    path = output_dir / native.FULL_STATE_DIR / f"step_{step}"
    (path / "distributed").mkdir(parents=True)
    (path / "distributed" / ".metadata").write_bytes(b"m")
    for rank in range(world_size):
        (path / "distributed" / f"__{rank}_0.distcp").write_bytes(b"w")
        (path / f"optimizer_rank_{rank}.pt").write_bytes(b"o")
        (path / f"rng_state_rank_{rank}.pt").write_bytes(b"r")
    (path / "training_state.pt").write_bytes(b"s")
    (path / "config.json").write_text("{}")
    return path


PARTS = ["distributed/.metadata", "training_state.pt", "config.json"] + [
    name for rank in range(WORLD)
    for name in (f"distributed/__{rank}_0.distcp", f"optimizer_rank_{rank}.pt", f"rng_state_rank_{rank}.pt")
]


def test_a_complete_full_state_checkpoint_has_no_problems(tmp_path):
    assert native.full_state_problems(write_full_state(tmp_path, 9), WORLD) == []


@settings(max_examples=40, deadline=None)
@given(missing=st.sets(st.sampled_from(PARTS), min_size=1), empty=st.booleans())
def test_any_missing_or_empty_part_makes_it_incomplete(tmp_path_factory, missing, empty):
    path = write_full_state(tmp_path_factory.mktemp("run"), 9)
    for part in missing:
        if empty:
            (path / part).write_bytes(b"")
        else:
            (path / part).unlink()
    problems = native.full_state_problems(path, WORLD)
    assert problems
    for part in missing:
        name = part.split("/")[-1]
        assert any(name in problem for problem in problems), (part, problems)


def test_mini_trainers_own_check_is_fooled_where_ours_is_not(tmp_path):
    """find_latest_full_state_checkpoint (full_state_checkpoint.py, 0.9.0) needs only training_state.pt: rank 0 writes
    it before the barrier, so a rank-1 optimizer shard can still be missing."""
    write_full_state(tmp_path, 10)
    newer = write_full_state(tmp_path, 20)
    (newer / "optimizer_rank_1.pt").unlink()
    assert (newer / "training_state.pt").exists()
    assert native.newest_complete_full_state(tmp_path, WORLD) == tmp_path / native.FULL_STATE_DIR / "step_10"
    assert newer.exists()  # kept, not deleted


def test_no_full_state_checkpoint_means_start_at_zero(tmp_path):
    assert native.newest_complete_full_state(tmp_path) is None
    (tmp_path / native.FULL_STATE_DIR / "step_3").mkdir(parents=True)
    assert native.newest_complete_full_state(tmp_path) is None


@pytest.mark.parametrize("spec, words", [
    ("mini-trainer:/recipes/osft.json", ["mini-trainer 0.9.0 trains only on CUDA", "init_process_group('nccl'"]),
    ("training-hub:sft", ["instructlab-training 0.16.2", "torch.cuda.set_device"]),
    ("training-hub:osft:/recipes/osft.json", ["osft runs rhai-innovation-mini-trainer", "nccl"]),
    ("training-hub:lora_sft", ["Unsloth", "GPU at import"]),
])
def test_without_cuda_the_runtime_refuses_at_start_with_the_reason(tmp_path, spec, words):
    assert not torch.cuda.is_available()  # this suite runs on CPU nodes
    process = start(tmp_path, "run", KUEUE_COHORTS_RECIPE=spec)
    assert process.wait() == 2, process.log()
    (line,) = [line for line in process.ours() if "cannot run here" in line]
    assert line.startswith(f"KUEUE_COHORTS_RECIPE={spec} cannot run here: no CUDA device on this node: ")
    for word in words:
        assert word in line, line


def test_an_unsupported_training_hub_algorithm_is_refused_by_name(tmp_path):
    process = start(tmp_path, "run", KUEUE_COHORTS_RECIPE="training-hub:gepa")
    assert process.wait() == 2
    assert any("training_hub algorithm 'gepa' is not supported by this runtime: use sft or osft" in line
               for line in process.ours()), process.log()


@pytest.mark.parametrize("spec", ["llamafactory:", "training-hub: ", "mini-trainer"])
def test_a_family_without_a_target_is_a_config_error(tmp_path, spec):
    process = start(tmp_path, "run", KUEUE_COHORTS_RECIPE=spec)
    assert process.wait() == 2
    assert any(f"KUEUE_COHORTS_RECIPE={spec!r} names the {spec.split(':')[0]} family but no target: use" in line
               for line in process.ours()), process.log()


def test_module_function_recipes_are_not_families():
    assert recipes.parse("trainer.demo:build_trainer") is None
    assert recipes.parse("llamafactory_ext:build") is None
    assert recipes.parse("llamafactory:/x/sft.yaml") == recipes.FamilyRecipe("llamafactory", "/x/sft.yaml")


def test_a_missing_llamafactory_config_is_refused_with_its_path(tmp_path):
    process = start(tmp_path, "run", KUEUE_COHORTS_RECIPE=f"llamafactory:{tmp_path / 'nope.yaml'}")
    assert process.wait() == 2
    assert any(line.startswith(f"KUEUE_COHORTS_RECIPE=llamafactory:{tmp_path / 'nope.yaml'}: cannot read the config")
               for line in process.ours()), process.log()
    (tmp_path / "list.yaml").write_text(json.dumps([1, 2]))
    process = start(tmp_path, "run", KUEUE_COHORTS_RECIPE=f"llamafactory:{tmp_path / 'list.yaml'}")
    assert process.wait() == 2
    assert any("the config must be a YAML mapping of LlamaFactory arguments, got list" in line
               for line in process.ours()), process.log()


def test_the_python_recipe_still_runs(tmp_path):
    done = run_ok(tmp_path, "run", KUEUE_COHORTS_DEMO_MAX_STEPS="2", KUEUE_COHORTS_DEMO_SAVE_STEPS="2")
    assert "training finished at global step 2" in done.ours()


def test_the_family_modules_ship_in_the_entrypoint_configmap():
    """The ConfigMap carries trainer/*.py only (ConfigMap keys cannot hold '/'), so the family modules are top-level
    modules of the package: a subpackage would be missing in the container."""
    from kueue_cohorts.components.model import runtime as runtime_manifests

    shipped = set(runtime_manifests.trainer_sources())
    assert {"recipes.py", "recipe_llamafactory.py", "recipe_native.py"} <= shipped
    assert "tiny_llamafactory.py" not in shipped  # local runs only
