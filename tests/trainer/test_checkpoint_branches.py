"""trainer.checkpoints: the completeness branches no other test reached (issue 42), each with the exact problem the
resume log shows, and resume with a known world size. Trees are written by hand; the expected problems are the
sentences of trainer/checkpoints.py's table, not recomputed."""
from __future__ import annotations

import errno
import json
import logging
import os
from pathlib import Path

import pytest

from kueue_cohorts.trainer import checkpoints
from kueue_cohorts.trainer.checkpoints import Checkpoint
from kueue_cohorts.trainer.entrypoint import agreed_resume
from tests.trainer.layouts import LAYOUTS
from tests.trainer.layouts import write as layouts_write

SINGLE = {"model.safetensors": b"w", "training_args.bin": b"a", "optimizer.pt": b"o", "scheduler.pt": b"s",
          "rng_state.pth": b"r"}


def _tree(path: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_bytes(data)
    return path


def _single(run: Path, step: int, state: bytes | None = None, **extra: bytes) -> Path:
    path = run / f"checkpoint-{step}"
    path.mkdir(parents=True)
    _tree(path, {**SINGLE, **extra})
    (path / "trainer_state.json").write_bytes(json.dumps({"global_step": step}).encode() if state is None else state)
    return path


@pytest.mark.parametrize("state", [b"[]", b"[1, 2]", b'"global_step"', b"7", b"null", b"true", b"{}",
                                   b'{"step": 7}', b"{not json", b"\xff\xfe"])
def test_a_trainer_state_that_is_not_a_json_object_with_global_step_is_one_problem_and_resume_skips_it(tmp_path,
                                                                                                       state):
    _single(tmp_path, 5)
    _single(tmp_path, 7, state)
    assert checkpoints.completeness_problems(Checkpoint(7, tmp_path / "checkpoint-7")) == [
        "trainer_state.json is not valid trainer state JSON"]
    assert checkpoints.newest_complete(tmp_path) == Checkpoint(5, tmp_path / "checkpoint-5")
    assert agreed_resume(tmp_path, True, 1) == Checkpoint(5, tmp_path / "checkpoint-5")


@pytest.mark.parametrize("state, problem", [
    (b'{"global_step": 6}', "trainer_state.json says global_step 6, the directory says 7"),
    (b'{"global_step": "7"}', "trainer_state.json says global_step 7, the directory says 7"),
    (b"", "trainer_state.json is missing or empty"),
])
def test_trainer_state_problems(tmp_path, state, problem):
    path = _single(tmp_path, 7, state)
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == [problem]


def test_a_missing_trainer_state_and_a_linked_one(tmp_path):
    path = _single(tmp_path, 7)
    (path / "trainer_state.json").unlink()
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == ["trainer_state.json is missing"]
    (tmp_path / "elsewhere.json").write_text(json.dumps({"global_step": 7}))
    os.symlink(tmp_path / "elsewhere.json", path / "trainer_state.json")
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == ["trainer_state.json is a symbolic link"]


def test_a_checkpoint_that_is_a_link_or_gone(tmp_path):
    real = _single(tmp_path, 7)
    os.symlink(real, tmp_path / "checkpoint-8")
    assert checkpoints.completeness_problems(Checkpoint(8, tmp_path / "checkpoint-8")) == [
        "checkpoint-8 is a symbolic link"]
    assert checkpoints.completeness_problems(Checkpoint(9, tmp_path / "checkpoint-9")) == ["checkpoint-9 is missing"]


def test_a_model_only_save_needs_no_optimizer_scheduler_or_rng(tmp_path):
    path = _single(tmp_path, 7)
    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
        (path / name).unlink()
    assert checkpoints.completeness_problems(Checkpoint(7, path), with_optimizer=False) == []
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == [
        "optimizer.pt is missing or empty", "scheduler.pt is missing or empty", "rng_state.pth is missing or empty"]


def test_an_empty_scaler_counts_only_when_saved(tmp_path):
    path = _single(tmp_path, 7, **{"scaler.pt": b""})
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == ["scaler.pt is missing or empty"]


@pytest.mark.parametrize("index, problem", [
    (b"{not json", "model.safetensors.index.json is not a valid weight index"),
    (b"[]", "model.safetensors.index.json is not a valid weight index"),
    (b'{"weight_map": []}', "model.safetensors.index.json is not a valid weight index"),
    (b'{"metadata": {}}', "model.safetensors.index.json is not a valid weight index"),
    (b'{"weight_map": {"a": "../outside.safetensors"}}',
     "model.safetensors.index.json names a shard outside the checkpoint: '../outside.safetensors'"),
    (b'{"weight_map": {"a": 3}}', "model.safetensors.index.json names a shard outside the checkpoint: 3"),
    (b'{"weight_map": {"a": "gone.safetensors"}}', "weight shard gone.safetensors is missing or empty"),
])
def test_weight_index_problems(tmp_path, index, problem):
    path = _single(tmp_path, 7, **{"model.safetensors.index.json": index})
    (path / "model.safetensors").unlink()
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == [problem]


def test_no_weights_at_all_and_a_weight_that_is_a_directory(tmp_path):
    path = _single(tmp_path, 7)
    (path / "model.safetensors").unlink()
    [problem] = checkpoints.completeness_problems(Checkpoint(7, path))
    assert problem.startswith("no model weights (model.safetensors, ") and "model.safetensors.index.json" in problem
    (path / "model.safetensors").mkdir()
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == [
        "model.safetensors is missing, a symbolic link or not a file"]


@pytest.mark.parametrize("world_size, newest", [(None, 300), (1, 200), (2, 300), (3, 100)])
def test_resume_with_a_known_world_size_takes_the_newest_checkpoint_every_rank_wrote(tmp_path, world_size, newest):
    """Checkpoint 100 has rng states of ranks 0-2, 200 a single-process one, 300 ranks 0-1 (hand-made)."""
    def ranks(count: int) -> dict[str, bytes]:
        return {f"rng_state_{r}.pth": b"r" for r in range(count)}

    base = {k: v for k, v in SINGLE.items() if k != "rng_state.pth"}
    for step, rng in ((100, ranks(3)), (200, {"rng_state.pth": b"r"}), (300, ranks(2))):
        path = _tree(tmp_path / f"checkpoint-{step}", {**base, **rng})
        (path / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    expected = Checkpoint(newest, tmp_path / f"checkpoint-{newest}")
    assert checkpoints.newest_complete(tmp_path, world_size=world_size) == expected
    if world_size is not None:
        assert agreed_resume(tmp_path, True, world_size) == expected


def test_a_missing_rank_of_a_known_world_size_is_named(tmp_path):
    detected, _, tree = LAYOUTS["ddp-two-ranks"]
    path = _tree(tmp_path / "checkpoint-100", tree)
    (path / "trainer_state.json").write_text(json.dumps({"global_step": 100}))
    assert checkpoints.completeness_problems(Checkpoint(100, path), world_size=3) == ["rng_state_2.pth is missing"]
    (path / "rng_state_0.pth").write_bytes(b"")
    assert checkpoints.completeness_problems(Checkpoint(100, path), world_size=2) == [
        "rng_state_0.pth is missing or empty"]


# --- the survivors of the mutation run (docs/testing.md): links, empty files, rank gaps, odd shard names --------------


def test_a_linked_or_empty_weight_file(tmp_path):
    path = _single(tmp_path, 7)
    (path / "model.safetensors").write_bytes(b"")
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == ["model.safetensors is empty"]
    (path / "model.safetensors").unlink()
    (tmp_path / "w").write_bytes(b"w")
    os.symlink(tmp_path / "w", path / "model.safetensors")
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == [
        "model.safetensors is missing, a symbolic link or not a file"]
    os.symlink(tmp_path / "w", path / "training_args.bin.tmp")
    (path / "training_args.bin").unlink()
    os.rename(path / "training_args.bin.tmp", path / "training_args.bin")
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == [
        "training_args.bin is a symbolic link", "model.safetensors is missing, a symbolic link or not a file"]


@pytest.mark.parametrize("shard", ["", ".", "..", "a\0b", "sub/x.safetensors"])
def test_a_shard_name_that_is_no_single_path_component(tmp_path, shard):
    index = json.dumps({"weight_map": {"a": shard}}).encode()
    path = _single(tmp_path, 7, **{"model.safetensors.index.json": index})
    (path / "model.safetensors").unlink()
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == [
        f"model.safetensors.index.json names a shard outside the checkpoint: {shard!r}"]


def test_shards_of_mixed_types_are_each_named_in_text_order_and_an_empty_index_is_named(tmp_path):
    index = json.dumps({"weight_map": {"a": "x.safetensors", "b": 3}}).encode()
    path = _single(tmp_path, 7, **{"model.safetensors.index.json": index})
    (path / "model.safetensors").unlink()
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == [
        "model.safetensors.index.json names a shard outside the checkpoint: 3",
        "weight shard x.safetensors is missing or empty"]
    (path / "model.safetensors.index.json").write_bytes(b"")
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == [
        "model.safetensors.index.json is missing or empty"]


def test_rank_gaps_with_an_unknown_world_size(tmp_path):
    """Without a world size the ranks up to the highest found are expected; with none found, rank 0."""
    path = _single(tmp_path, 7)
    (path / "rng_state.pth").unlink()
    for rank in (0, 2):
        (path / f"rng_state_{rank}.pth").write_bytes(b"r")
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == ["rng_state_1.pth is missing"]
    fsdp = _tree(tmp_path / "checkpoint-8", {"pytorch_model_fsdp_rank0.bin": b"w", "scheduler.pt": b"s",
                                             "rng_state_0.pth": b"r"})
    (fsdp / "trainer_state.json").write_text(json.dumps({"global_step": 8}))
    assert checkpoints.completeness_problems(Checkpoint(8, fsdp)) == ["FSDP optimizer shard of rank 0 is missing"]


def test_a_sharded_fsdp_directory_without_metadata_or_data(tmp_path):
    path = _tree(tmp_path / "checkpoint-8", {"pytorch_model_fsdp_0/readme": b"x", "optimizer_0/.metadata": b"m",
                                             "optimizer_0/__0_0.distcp": b"d", "scheduler.pt": b"s",
                                             "rng_state_0.pth": b"r"})
    (path / "trainer_state.json").write_text(json.dumps({"global_step": 8}))
    assert checkpoints.completeness_problems(Checkpoint(8, path)) == [
        "pytorch_model_fsdp_0/.metadata is missing or empty", "pytorch_model_fsdp_0/ holds no .distcp data"]


def test_deepspeed_latest_empty_or_naming_a_link_and_optimizer_partitions_only_with_the_optimizer(tmp_path):
    path = _tree(tmp_path / "checkpoint-5", {"training_args.bin": b"a", "latest": b"global_step5",
                                             "global_step5/mp_rank_00_model_states.pt": b"m",
                                             "global_step5/zero_pp_rank_0_mp_rank_00_optim_states.pt": b"o0",
                                             "rng_state_0.pth": b"r", "rng_state_1.pth": b"r"})
    (path / "trainer_state.json").write_text(json.dumps({"global_step": 5}))
    assert checkpoints.completeness_problems(Checkpoint(5, path), with_optimizer=False, world_size=2) == []
    assert checkpoints.completeness_problems(Checkpoint(5, path), world_size=2) == [
        "global_step5/ has no ZeRO optimizer state of rank 1"]
    os.rename(path / "global_step5", tmp_path / "outside")
    os.symlink(tmp_path / "outside", path / "global_step5")
    assert checkpoints.completeness_problems(Checkpoint(5, path), world_size=2) == [
        "latest names global_step5/, which is missing or not a real directory"]
    (path / "latest").write_bytes(b"")
    assert checkpoints.detect_layout(path) == "deepspeed"
    assert checkpoints.completeness_problems(Checkpoint(5, path), world_size=2) == ["latest is missing or empty"]


def test_the_run_directory_is_made_with_its_missing_parents_and_refusals_say_why(tmp_path):
    root = tmp_path / "mnt" / "checkpoints"  # not there yet: the first run on a fresh volume makes it
    assert checkpoints.ensure_run_dir(root, "job-1") == root / "job-1" and (root / "job-1").is_dir()
    with pytest.raises(ValueError) as refused:
        checkpoints.run_dir(root, "a/b")
    assert str(refused.value) == ("run name 'a/b' must be one path component of letters, digits, '-', '_' or '.' "
                                  "(the TrainJob name); set KUEUE_COHORTS_RUN_NAME")
    os.symlink(tmp_path, root / "linked")
    with pytest.raises(ValueError) as refused:
        checkpoints.run_dir(root, "linked")
    assert str(refused.value) == (f"{root / 'linked'} is a symbolic link (to {str(tmp_path)!r}): a run directory on "
                                  "the shared checkpoint volume must be a real directory; remove the link")
    (root / "file").write_text("x")
    with pytest.raises(FileExistsError):  # the documented OSError: mkdir finds a file there
        checkpoints.ensure_run_dir(root, "file")


@pytest.mark.parametrize("stored, name", [
    ("/mnt/checkpoints/job/checkpoint-5", "checkpoint-5"), ("out/checkpoint-5/", "checkpoint-5"),
    ("checkpoint-12", "checkpoint-12"), ("out/checkpoint-5 ", None), ("out/checkpoint-5X", None), ("out/best", None),
    ("", None), (None, None),
])
def test_the_best_checkpoint_is_named_by_its_last_path_component(stored, name):
    assert checkpoints.best_checkpoint_name(stored) == name


def test_is_complete_takes_the_world_size(tmp_path):
    path = _single(tmp_path, 7)
    (path / "rng_state.pth").unlink()
    (path / "rng_state_0.pth").write_bytes(b"r")
    assert checkpoints.is_complete(Checkpoint(7, path))
    assert not checkpoints.is_complete(Checkpoint(7, path), world_size=2)


# --- the survivors of the full mutation run (benchmarks/mutation.py --only checkpoints): the resume log line, rotation
# --- with a model-only run or a known world size, and the races the run directory and the flush guard against ------


def test_each_skipped_checkpoint_is_logged_with_every_problem_in_one_line(tmp_path, caplog):
    _single(tmp_path, 5)
    path = _single(tmp_path, 7)
    (path / "optimizer.pt").unlink()
    (path / "rng_state.pth").write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="kueue_cohorts.trainer"):
        assert checkpoints.newest_complete(tmp_path) == Checkpoint(5, tmp_path / "checkpoint-5")
    assert [r.getMessage() for r in caplog.records] == [
        f"skipping incomplete checkpoint {path} (kept, not deleted): "
        "optimizer.pt is missing or empty; rng_state.pth is missing or empty"]


def test_an_empty_gathered_weight_file_of_a_deepspeed_checkpoint_is_named(tmp_path):
    path = _tree(tmp_path / "checkpoint-5", {"training_args.bin": b"a", "latest": b"global_step5",
                                             "global_step5/mp_rank_00_model_states.pt": b"m",
                                             "model.safetensors": b"", "rng_state.pth": b"r"})
    (path / "trainer_state.json").write_text(json.dumps({"global_step": 5}))
    assert checkpoints.completeness_problems(Checkpoint(5, path)) == ["model.safetensors is empty"]


def test_rotation_of_a_model_only_run_counts_its_checkpoints_only_when_told(tmp_path):
    """A run that saves only the model (save_only_model) has no optimizer, scheduler or RNG state: rotation counts
    its checkpoints complete only with with_optimizer=False; by default they are incomplete and never deleted."""
    for step in (10, 20, 30):
        path = _single(tmp_path, step)
        for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
            (path / name).unlink()
    assert checkpoints.rotate(tmp_path, 1) == []
    assert checkpoints.rotate(tmp_path, 1, with_optimizer=False) == [tmp_path / "checkpoint-10",
                                                                       tmp_path / "checkpoint-20"]
    assert [c.step for c in checkpoints.list_checkpoints(tmp_path)] == [30]


def test_rotation_with_a_known_world_size_never_deletes_a_save_one_rank_did_not_finish(tmp_path):
    """Two processes: checkpoint-20 has rank 0's RNG state only (rank 1 was killed mid-save), so it is not complete
    and not counted; without the world size it would pass for a one-rank-too-few save and be rotated away."""
    for step, ranks in ((10, 2), (20, 1), (30, 2), (40, 2)):
        path = _single(tmp_path, step)
        (path / "rng_state.pth").unlink()
        for rank in range(ranks):
            (path / f"rng_state_{rank}.pth").write_bytes(b"r")
    assert checkpoints.rotate(tmp_path, 2, world_size=2) == [tmp_path / "checkpoint-10"]
    assert [c.step for c in checkpoints.list_checkpoints(tmp_path)] == [20, 30, 40]


def test_a_run_directory_replaced_by_a_file_right_after_mkdir_is_refused(tmp_path, monkeypatch):
    """Another writer of the shared volume swaps the run directory for a file between mkdir and the check."""
    real_mkdir = Path.mkdir

    def mkdir_then_swapped(self, *args, **kwargs):
        real_mkdir(self, *args, **kwargs)
        if self.name == "job-1":
            self.rmdir()
            self.write_text("not a directory")

    monkeypatch.setattr(Path, "mkdir", mkdir_then_swapped)
    with pytest.raises(ValueError) as refused:
        checkpoints.ensure_run_dir(tmp_path, "job-1")
    assert str(refused.value) == f"{tmp_path / 'job-1'} is not a directory"


def test_a_file_swapped_for_a_link_during_the_flush_is_not_followed(tmp_path, monkeypatch):
    """The flush opens each file with O_NOFOLLOW: a file that became a symbolic link after the walk checked it is
    refused (ELOOP), never opened through the link (a FIFO or a device elsewhere would block or be touched)."""
    path = _single(tmp_path, 7)
    (tmp_path / "elsewhere").write_bytes(b"x")
    (path / "optimizer.pt").unlink()
    os.symlink(tmp_path / "elsewhere", path / "optimizer.pt")
    monkeypatch.setattr(os.path, "islink", lambda _name: False)  # it was a regular file when the walk looked
    with pytest.raises(OSError) as refused:
        checkpoints.fsync_tree(path)
    assert refused.value.errno == errno.ELOOP


def test_a_file_renamed_away_during_the_flush_is_passed_over_and_the_rest_flushed(tmp_path, monkeypatch):
    """A writer's temporary file renamed meanwhile (FileNotFoundError on open) is skipped; every other file of the
    same directory is still flushed and counted."""
    path = _single(tmp_path, 7)
    real_open = os.open
    opened: list[str] = []

    def first_file_renamed_before_its_open(name: str, flags: int, *args: int) -> int:
        if not opened and os.path.isfile(name):
            os.rename(name, tmp_path / "renamed")
        opened.append(os.path.basename(name))
        return real_open(name, flags, *args)

    monkeypatch.setattr(os, "open", first_file_renamed_before_its_open)
    assert checkpoints.fsync_tree(path) == len(SINGLE)  # the SINGLE files and trainer_state.json, less the renamed
    assert sorted(opened[:len(SINGLE) + 1]) == sorted([*SINGLE, "trainer_state.json"])


def test_a_symlinked_checkpoint_is_logged_by_its_path(tmp_path, caplog):
    _single(tmp_path / "elsewhere", 9)
    os.symlink(tmp_path / "elsewhere" / "checkpoint-9", tmp_path / "checkpoint-9")
    with caplog.at_level(logging.WARNING, logger="kueue_cohorts.trainer"):
        assert checkpoints.list_checkpoints(tmp_path) == []
    assert [r.getMessage() for r in caplog.records] == [
        f"ignoring {tmp_path / 'checkpoint-9'}: a symbolic link, not a checkpoint directory"]


def test_a_file_deleted_while_the_checkpoint_is_checked_counts_as_missing(tmp_path, monkeypatch):
    """The directory was listed with optimizer.pt, which is gone by the time its size is read (another node's
    rotation, a cleanup): the checkpoint is incomplete, never taken for complete."""
    path = _single(tmp_path, 7)
    real_scandir = os.scandir

    def listed_then_deleted(where):
        entries = list(real_scandir(where))
        if Path(where) == path and (path / "optimizer.pt").exists():
            (path / "optimizer.pt").unlink()
        return iter(entries)

    monkeypatch.setattr(os, "scandir", listed_then_deleted)
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == ["optimizer.pt is missing or empty"]


def test_a_global_step_directory_without_latest_is_a_deepspeed_save_missing_its_tag(tmp_path):
    """DeepSpeed writes `latest` after every rank's files: a `global_step<N>/` directory without it is a DeepSpeed
    save cut short, not a single-file checkpoint; a file of that name is no such marker."""
    path = _tree(tmp_path / "checkpoint-5", {"training_args.bin": b"a", "global_step5/mp_rank_00_model_states.pt": b"m",
                                             "rng_state.pth": b"r"})
    (path / "trainer_state.json").write_text(json.dumps({"global_step": 5}))
    assert checkpoints.detect_layout(path) == "deepspeed"
    assert checkpoints.completeness_problems(Checkpoint(5, path)) == ["latest is missing or empty"]
    other = _single(tmp_path, 6, **{"global_step6": b"a file"})
    assert checkpoints.detect_layout(other) == "single"


@pytest.mark.parametrize("present, problems", [
    (("pytorch_model_fsdp.bin",), ["optimizer.bin is missing or empty"]),
    (("optimizer.bin",), ["pytorch_model_fsdp.bin is missing or empty"]),
])
def test_either_fsdp_full_state_file_marks_the_layout(tmp_path, present, problems):
    """FSDP FULL_STATE_DICT: pytorch_model_fsdp.bin or optimizer.bin alone already says fsdp-full, so the other one
    is named missing (not a single-file checkpoint that would not ask for it)."""
    path = _single(tmp_path, 7, **{name: b"x" for name in present})
    (path / "optimizer.pt").unlink()
    assert checkpoints.detect_layout(path) == "fsdp-full"
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == problems


def test_a_checkpoint_without_weights_lists_every_weight_file_it_looked_for(tmp_path):
    path = _single(tmp_path, 7)
    (path / "model.safetensors").unlink()
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == [
        "no model weights (model.safetensors, pytorch_model.bin, adapter_model.safetensors, adapter_model.bin, "
        "model.safetensors.index.json, pytorch_model.bin.index.json)"]


def test_fsdp_local_names_the_missing_rank_of_model_and_optimizer_shards(tmp_path):
    path = layouts_write(tmp_path, "fsdp-per-rank-files", 7,
                         drop=("pytorch_model_fsdp_0_rank1.bin", "optimizer_0_rank1.bin"))
    assert checkpoints.completeness_problems(Checkpoint(7, path), world_size=2) == [
        "FSDP model shard of rank 1 is missing", "FSDP optimizer shard of rank 1 is missing"]


def test_sharded_fsdp_without_its_optimizer_directory_names_that_directory(tmp_path):
    path = layouts_write(tmp_path, "fsdp-sharded", 7,
                         drop=("optimizer_0/.metadata", "optimizer_0/__0_0.distcp", "optimizer_0/__1_0.distcp"))
    assert checkpoints.completeness_problems(Checkpoint(7, path), world_size=2) == ["optimizer_0/ is missing"]


def test_a_saved_scaler_does_not_hide_the_other_problems(tmp_path):
    path = _single(tmp_path, 7, **{"scaler.pt": b"s"})
    (path / "optimizer.pt").unlink()
    assert checkpoints.completeness_problems(Checkpoint(7, path)) == ["optimizer.pt is missing or empty"]


@pytest.mark.parametrize("kind", ["link", "file"])
def test_a_checkpoint_that_became_a_link_or_a_file_before_its_delete_is_left_alone(tmp_path, caplog, kind):
    """Rotation picked checkpoint-7, then someone replaced it: nothing is deleted through a link, nothing counted."""
    target = _single(tmp_path / "elsewhere", 7)
    path = tmp_path / "run" / "checkpoint-7"
    path.parent.mkdir()
    if kind == "link":
        os.symlink(target, path)
    else:
        path.write_text("x")
    with caplog.at_level(logging.WARNING, logger="kueue_cohorts.trainer"):
        assert checkpoints._remove(path) is False
    assert [r.getMessage() for r in caplog.records] == [
        f"not rotating {path} away: no longer a real directory"]
    assert os.path.lexists(path) and (target / "model.safetensors").exists()
