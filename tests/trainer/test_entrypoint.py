"""trainer.entrypoint configuration: every unusable setting stops the run with exit code 2 and names the fix."""
from __future__ import annotations

import logging

import pytest

from kueue_cohorts.trainer import demo, entrypoint


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
          "KUEUE_COHORTS_SAVE_STEPS": "0"}, "KUEUE_COHORTS_SAVE_STEPS='0' must be a positive integer"),
        ({"KUEUE_COHORTS_CHECKPOINT_ROOT": "{root}", "KUEUE_COHORTS_RUN_NAME": "run",
          "KUEUE_COHORTS_SAVE_STEPS": "every 50"}, "KUEUE_COHORTS_SAVE_STEPS='every 50' must be a positive integer"),
        ({"KUEUE_COHORTS_CHECKPOINT_ROOT": "{root}", "KUEUE_COHORTS_RUN_NAME": "run",
          "KUEUE_COHORTS_RECIPE": "no_colon"}, "must be 'module:function'"),
        ({"KUEUE_COHORTS_CHECKPOINT_ROOT": "{root}", "KUEUE_COHORTS_RUN_NAME": "run",
          "KUEUE_COHORTS_RECIPE": "kueue_cohorts.trainer.demo:missing"}, "has no 'missing'"),
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
    assert (ns.run_name, ns.save_steps, ns.checkpoint_root, ns.recipe) == (
        "flag",
        7,
        tmp_path,
        entrypoint.DEFAULT_RECIPE,
    )


@pytest.fixture
def records():
    """The entrypoint logger's records (it does not propagate to the root logger, so caplog misses them)."""
    found: list[logging.LogRecord] = []
    handler = logging.Handler(logging.INFO)
    handler.emit = found.append
    logger = logging.getLogger("kueue_cohorts.trainer")
    logger.addHandler(handler)
    yield found
    logger.removeHandler(handler)


def test_save_on_each_node_is_forced_off_with_a_warning(tmp_path, records):
    """The checkpoint root is one RWX volume for every node: one writer (world rank 0) for the shared files."""
    trainer = demo.build_trainer(str(tmp_path))
    trainer.args.save_on_each_node = True
    entrypoint._prepare(trainer, tmp_path, None)
    assert trainer.args.save_on_each_node is False and trainer.args.should_save
    assert any(r.getMessage().startswith("save_on_each_node=True ignored") for r in records)


@pytest.mark.parametrize("save_steps", [7, 20])
def test_the_save_steps_override_keeps_an_evaluation_at_every_save_of_the_best_model_recipe(tmp_path, monkeypatch,
                                                                                         save_steps):
    monkeypatch.setenv("KUEUE_COHORTS_DEMO_BEST_MODEL", "1")
    monkeypatch.setenv("KUEUE_COHORTS_DEMO_SAVE_STEPS", "10")
    trainer = demo.build_trainer(str(tmp_path))
    assert trainer.args.load_best_model_at_end and trainer.args.eval_steps == 10
    limit = entrypoint._prepare(trainer, tmp_path, save_steps)
    assert (trainer.args.save_steps, trainer.args.eval_steps, limit) == (save_steps, save_steps, 2)
    assert trainer.args.save_total_limit is None  # our rotation applies the limit, the Trainer's is off
