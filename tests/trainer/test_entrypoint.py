"""trainer.entrypoint configuration: every unusable setting stops the run with exit code 2 and names the fix."""
from __future__ import annotations

import logging

import pytest

from trainer import demo, entrypoint


def wrong_output_dir(output_dir: str):
    """A recipe that ignores the directory it is given."""
    return demo.build_trainer(output_dir + "-elsewhere")


@pytest.mark.parametrize(
    "env, message",
    [
        ({"KUEUE_COHORTS_RUN_NAME": "run"}, "KUEUE_COHORTS_CHECKPOINT_ROOT is not set"),
        ({"KUEUE_COHORTS_CHECKPOINT_ROOT": "{root}"}, "KUEUE_COHORTS_RUN_NAME is not set"),
        ({"KUEUE_COHORTS_CHECKPOINT_ROOT": "{root}", "KUEUE_COHORTS_RUN_NAME": "../escape"}, "one path component"),
        ({"KUEUE_COHORTS_CHECKPOINT_ROOT": "{root}", "KUEUE_COHORTS_RUN_NAME": "run",
          "KUEUE_COHORTS_SAVE_STEPS": "0"}, "must be a positive integer"),
        ({"KUEUE_COHORTS_CHECKPOINT_ROOT": "{root}", "KUEUE_COHORTS_RUN_NAME": "run",
          "KUEUE_COHORTS_RECIPE": "no_colon"}, "must be 'module:function'"),
        ({"KUEUE_COHORTS_CHECKPOINT_ROOT": "{root}", "KUEUE_COHORTS_RUN_NAME": "run",
          "KUEUE_COHORTS_RECIPE": "trainer.demo:missing"}, "has no 'missing'"),
        ({"KUEUE_COHORTS_CHECKPOINT_ROOT": "{root}", "KUEUE_COHORTS_RUN_NAME": "run",
          "KUEUE_COHORTS_RECIPE": "tests.trainer.test_entrypoint:wrong_output_dir"}, "not the run directory"),
        ({"KUEUE_COHORTS_CHECKPOINT_ROOT": "{root}", "KUEUE_COHORTS_RUN_NAME": "run", "PET_NNODES": "2"},
         "PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT unset"),
    ],
)
def test_configuration_errors_exit_2_with_the_variable_and_fix(tmp_path, env, message):
    env = {key: value.format(root=tmp_path) for key, value in env.items()}
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = records.append
    logger = logging.getLogger("kueue_cohorts.trainer")  # the entrypoint's logger does not propagate to root
    logger.addHandler(handler)
    try:
        assert entrypoint.run([], env) == 2
    finally:
        logger.removeHandler(handler)
    assert any(message in record.getMessage() for record in records), [r.getMessage() for r in records]


def test_flags_override_the_environment(tmp_path):
    ns = entrypoint.parse_args(["--run-name", "flag", "--save-steps", "7"],
                               {"KUEUE_COHORTS_CHECKPOINT_ROOT": str(tmp_path), "KUEUE_COHORTS_RUN_NAME": "env"})
    assert (ns.run_name, ns.save_steps, ns.checkpoint_root, ns.recipe) == ("flag", 7, tmp_path, entrypoint.DEFAULT_RECIPE)
