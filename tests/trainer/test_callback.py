"""PreemptionCallback.on_save without a training loop: who flushes, who judges, who rotates."""
from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from transformers import TrainerControl, TrainerState

from kueue_cohorts.trainer import checkpoints
from kueue_cohorts.trainer.callback import PreemptionCallback
from tests.trainer import layouts


def _run_dir(tmp_path):
    for step in (10, 20, 30):
        layouts.write(tmp_path, "fsdp-sharded", step)
    return tmp_path


@pytest.mark.parametrize("save_on_each_node", [False, True])
def test_only_world_rank_0_rotates(tmp_path, save_on_each_node):
    """A process that is not world rank 0 never deletes, even when TrainingArguments.should_save is true for it
    (local rank 0 of another node with save_on_each_node)."""
    run_dir = _run_dir(tmp_path)
    args = SimpleNamespace(should_save=save_on_each_node, device="cpu")
    other_node = TrainerState(global_step=30, is_world_process_zero=False, is_local_process_zero=True)
    PreemptionCallback(run_dir, 1, None, True, world_size=2).on_save(args, other_node, TrainerControl())
    assert [c.step for c in checkpoints.list_checkpoints(run_dir)] == [10, 20, 30]

    owner = TrainerState(global_step=30, is_world_process_zero=True)
    PreemptionCallback(run_dir, 1, None, True, world_size=2).on_save(args, owner, TrainerControl())
    assert [c.step for c in checkpoints.list_checkpoints(run_dir)] == [30]


def test_every_process_flushes_and_rotation_keeps_the_best(tmp_path, caplog):
    run_dir = _run_dir(tmp_path)
    args = SimpleNamespace(should_save=False, device="cpu")
    callback = PreemptionCallback(run_dir, 1, None, True, world_size=2)
    with caplog.at_level(logging.INFO, logger="kueue_cohorts.trainer"):
        callback.on_save(args, TrainerState(global_step=30, is_world_process_zero=False), TrainerControl())
    assert len(callback.flush_seconds) == 1  # a rank that does not own the directory still flushes what it wrote
    assert any(r.getMessage().startswith("saved checkpoint-30 at global step 30: 10 files flushed")
               for r in caplog.records)

    owner = TrainerState(global_step=30, is_world_process_zero=True,
                         best_model_checkpoint="/mnt/checkpoints/job/checkpoint-10")
    callback.on_save(args, owner, TrainerControl())
    assert [c.step for c in checkpoints.list_checkpoints(run_dir)] == [10, 30]
