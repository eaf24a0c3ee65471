"""trainer.checkpoints on hand-made directory trees: naming, completeness, rotation, run scoping."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from trainer import checkpoints
from trainer.checkpoints import Checkpoint

FULL = {
    "model.safetensors": b"weights",
    "training_args.bin": b"args",
    "optimizer.pt": b"optim",
    "scheduler.pt": b"sched",
    "rng_state.pth": b"rng",
    "config.json": b"{}",
}


def make(run: Path, step: int, drop: tuple[str, ...] = (), empty: tuple[str, ...] = (), state_step=None) -> Path:
    """A checkpoint-<step> directory with every file the Trainer writes, minus `drop`, with `empty` zero-length."""
    path = run / f"checkpoint-{step}"
    path.mkdir(parents=True)
    for name, data in FULL.items():
        if name not in drop:
            (path / name).write_bytes(b"" if name in empty else data)
    if "trainer_state.json" not in drop:
        (path / "trainer_state.json").write_text(json.dumps({"global_step": step if state_step is None else state_step}))
    return path


def steps(items) -> list[int]:
    return [c.step for c in items]


def test_only_exact_checkpoint_int_directories_count_compared_as_integers(tmp_path):
    for step in (9, 10, 100):
        make(tmp_path, step)
    (tmp_path / "checkpoint-11abc").mkdir()
    (tmp_path / "checkpoint-12.tmp").mkdir()
    (tmp_path / "checkpoint-").mkdir()
    (tmp_path / "tmp-checkpoint-13").mkdir()
    (tmp_path / "checkpoint-14").write_text("a file, not a directory")
    assert steps(checkpoints.list_checkpoints(tmp_path)) == [9, 10, 100]
    assert checkpoints.newest_complete(tmp_path).step == 100


def test_missing_directory_has_no_checkpoints(tmp_path):
    assert checkpoints.list_checkpoints(tmp_path / "absent") == []
    assert checkpoints.newest_complete(tmp_path / "absent") is None


def test_a_full_checkpoint_is_complete(tmp_path):
    assert checkpoints.completeness_problems(Checkpoint(5, make(tmp_path, 5))) == []


@pytest.mark.parametrize(
    "kwargs, problem",
    [
        ({"drop": ("trainer_state.json",)}, "trainer_state.json is missing"),
        ({"state_step": 4}, "says global_step 4"),
        ({"drop": ("model.safetensors",)}, "no model weights"),
        ({"empty": ("model.safetensors",)}, "model.safetensors is empty"),
        ({"drop": ("optimizer.pt",)}, "optimizer.pt is missing or empty"),
        ({"empty": ("scheduler.pt",)}, "scheduler.pt is missing or empty"),
        ({"drop": ("rng_state.pth",)}, "rng_state*.pth is missing or empty"),
        ({"drop": ("training_args.bin",)}, "training_args.bin is missing or empty"),
    ],
)
def test_each_missing_or_broken_file_makes_a_checkpoint_incomplete(tmp_path, kwargs, problem):
    path = make(tmp_path, 5, **kwargs)
    problems = checkpoints.completeness_problems(Checkpoint(5, path))
    assert any(problem in p for p in problems), problems


def test_truncated_trainer_state_is_incomplete(tmp_path):
    path = make(tmp_path, 5)
    (path / "trainer_state.json").write_text('{"global_st')
    assert checkpoints.completeness_problems(Checkpoint(5, path)) == ["trainer_state.json is not valid trainer state JSON"]


def test_sharded_weights_need_every_shard(tmp_path):
    path = make(tmp_path, 5, drop=("model.safetensors",))
    shards = {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}
    (path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": shards}))
    (path / shards["a"]).write_bytes(b"x")
    assert checkpoints.completeness_problems(Checkpoint(5, path)) == [
        "weight shard model-00002-of-00002.safetensors is missing or empty"]
    (path / shards["b"]).write_bytes(b"x")
    assert checkpoints.is_complete(Checkpoint(5, path))


def test_save_only_model_does_not_need_optimizer_state(tmp_path):
    path = make(tmp_path, 5, drop=("optimizer.pt", "scheduler.pt", "rng_state.pth"))
    assert not checkpoints.is_complete(Checkpoint(5, path))
    assert checkpoints.is_complete(Checkpoint(5, path), with_optimizer=False)


def test_newest_incomplete_is_logged_skipped_and_kept(tmp_path, caplog):
    make(tmp_path, 10)
    make(tmp_path, 20, drop=("trainer_state.json",))
    make(tmp_path, 30, empty=("model.safetensors",))
    with caplog.at_level(logging.WARNING, logger="kueue_cohorts.trainer"):
        assert checkpoints.newest_complete(tmp_path).step == 10
    messages = [r.getMessage() for r in caplog.records]
    assert any("checkpoint-30" in m and "model.safetensors is empty" in m for m in messages)
    assert any("checkpoint-20" in m and "trainer_state.json is missing" in m for m in messages)
    assert steps(checkpoints.list_checkpoints(tmp_path)) == [10, 20, 30]  # nothing deleted


def test_rotation_keeps_the_limit_newest_complete(tmp_path):
    for step in (10, 20, 30, 40):
        make(tmp_path, step)
    deleted = checkpoints.rotate(tmp_path, 2, protected=[tmp_path / "checkpoint-40"])
    assert [p.name for p in deleted] == ["checkpoint-10", "checkpoint-20"]
    assert steps(checkpoints.list_checkpoints(tmp_path)) == [30, 40]


def test_rotation_never_deletes_the_resumed_from_or_an_incomplete_checkpoint(tmp_path):
    make(tmp_path, 10)
    make(tmp_path, 13)  # resumed from
    make(tmp_path, 15, drop=("trainer_state.json",))  # incomplete leftover of a killed save
    make(tmp_path, 20)
    make(tmp_path, 30)  # just written
    deleted = checkpoints.rotate(tmp_path, 1, protected=[tmp_path / "checkpoint-30", tmp_path / "checkpoint-13"])
    assert [p.name for p in deleted] == ["checkpoint-10", "checkpoint-20"]
    assert steps(checkpoints.list_checkpoints(tmp_path)) == [13, 15, 30]


def test_rotation_with_no_limit_keeps_everything(tmp_path):
    for step in (1, 2, 3):
        make(tmp_path, step)
    assert checkpoints.rotate(tmp_path, None) == [] and checkpoints.rotate(tmp_path, 0) == []
    assert steps(checkpoints.list_checkpoints(tmp_path)) == [1, 2, 3]


def test_rotation_only_touches_its_own_run(tmp_path):
    mine, other = tmp_path / "run-a", tmp_path / "run-b"
    for step in (1, 2, 3):
        make(mine, step)
        make(other, step)
    checkpoints.rotate(mine, 1, protected=[mine / "checkpoint-3"])
    assert steps(checkpoints.list_checkpoints(mine)) == [3]
    assert steps(checkpoints.list_checkpoints(other)) == [1, 2, 3]


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../other", "-x"])
def test_run_name_must_be_one_safe_path_component(tmp_path, name):
    with pytest.raises(ValueError):
        checkpoints.run_dir(tmp_path, name)


def test_run_dir_is_root_slash_trainjob_name(tmp_path):
    assert checkpoints.run_dir(tmp_path, "c12-training-abcde") == tmp_path / "c12-training-abcde"


def test_fsync_tree_flushes_every_file(tmp_path):
    path = make(tmp_path, 1)
    assert checkpoints.fsync_tree(path) == len(FULL) + 1
