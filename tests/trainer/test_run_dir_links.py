"""Issue 28 finding 7: a run directory on the shared checkpoint volume is never followed out of the checkpoint root
(trainer/checkpoints.py run_dir / ensure_run_dir, used by the entrypoint): a symbolic link there (to a directory
outside the root, inside it, or dangling) is refused before the run resumes from it or rotates (deletes) in it."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from kueue_cohorts.trainer import checkpoints, entrypoint

RUN = "c12-training-abcde"


def _link_to(kind: str, root: Path, outside: Path) -> str:
    return {"outside": str(outside), "inside": str(root / "other-run"), "dangling": str(root / "nowhere"),
            "relative-up": "../outside", "etc": "/etc"}[kind]


@pytest.mark.parametrize("kind", ["outside", "inside", "dangling", "relative-up", "etc"])
def test_a_symlinked_run_directory_is_refused(tmp_path, kind):
    root, outside = tmp_path / "ckpt", tmp_path / "outside"
    root.mkdir()
    (root / "other-run").mkdir()
    outside.mkdir()
    (outside / "checkpoint-5").mkdir()  # data a run must never resume from nor rotate away
    os.symlink(_link_to(kind, root, outside), root / RUN)
    with pytest.raises(ValueError, match="symbolic link"):
        checkpoints.run_dir(root, RUN)
    with pytest.raises(ValueError, match="symbolic link"):
        checkpoints.ensure_run_dir(root, RUN)
    assert (outside / "checkpoint-5").is_dir()


def test_the_entrypoint_stops_with_a_config_error_on_a_symlinked_run_directory(tmp_path):
    root, outside = tmp_path / "ckpt", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    os.symlink(outside, root / RUN)
    env = {"KUEUE_COHORTS_CHECKPOINT_ROOT": str(root), "KUEUE_COHORTS_RUN_NAME": RUN,
           "KUEUE_COHORTS_RECIPE": "trainer.demo:build_trainer"}
    assert entrypoint.run([], env) == 2
    assert list(outside.iterdir()) == []


def test_a_real_run_directory_and_a_symlinked_root_are_fine(tmp_path):
    """The root itself may be a link (a mount path behind a symlink); the run directory under it is real."""
    data = tmp_path / "data"
    data.mkdir()
    root = tmp_path / "mnt-checkpoints"
    os.symlink(data, root)
    made = checkpoints.ensure_run_dir(root, RUN)
    assert made == root / RUN and (data / RUN).is_dir() and not made.is_symlink()
    assert checkpoints.ensure_run_dir(root, RUN) == made  # again: exists, still fine
