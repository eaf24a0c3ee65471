"""Local runs of recipe families (trainer.recipes) for the tests and the benchmark.

A family recipe is the user's config, not a Python function that builds a Trainer, so the hold point of local runs
comes in as an extra TrainerCallback: `KUEUE_COHORTS_RECIPE_CALLBACKS=trainer.local.families:callbacks` with
KUEUE_COHORTS_TEST_HOLD=step:<N> blocks inside optimizer step N+1 until the SIGTERM latch is set
(trainer.local.recipes), so the signal lands mid-step without timing guesses. `build_llamafactory_project` and
`start_llamafactory` run the tiny LlamaFactory project (trainer/local/tiny_llamafactory.py) in the family's own venv.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from kueue_cohorts.trainer.local.process import ROOT, TrainerProcess, trainer_env
from kueue_cohorts.trainer.local.recipes import _hold_point, _HoldInStep
from kueue_cohorts.trainer.recipes import recipe_python


def callbacks() -> list[_HoldInStep]:
    """[the step hold of KUEUE_COHORTS_TEST_HOLD] or [] when it is unset or not a step hold."""
    where, step = _hold_point()
    return [_HoldInStep(step)] if where == "step" else []


def llamafactory_python() -> Path:
    """The LlamaFactory venv's interpreter in this checkout (may not exist: `make recipe-deps` creates it)."""
    return recipe_python("llamafactory", ROOT)


def build_llamafactory_project(directory: Path, **knobs: object) -> Path:
    """Build the tiny LlamaFactory project (trainer.local.tiny_llamafactory.build_project with `knobs`) with the
    family's own interpreter; return its config.yaml. Raises subprocess.CalledProcessError if building fails."""
    code = ("import sys, json; from pathlib import Path; from kueue_cohorts.trainer.local.tiny_llamafactory import "
            "build_project; "
            "print(build_project(Path(sys.argv[1]), **json.loads(sys.argv[2])))")
    out = subprocess.run([str(llamafactory_python()), "-c", code, str(directory), json.dumps(knobs)],
                         env=trainer_env(), cwd=ROOT, capture_output=True, text=True, check=True)
    return Path(out.stdout.strip().splitlines()[-1])


def start_llamafactory(root: Path, run_name: str, config: Path, **env: str) -> TrainerProcess:
    """Start `python -m trainer` with `KUEUE_COHORTS_RECIPE=llamafactory:<config>` in the family's venv, with the hold
    callbacks and a private Hugging Face cache under `root/.hf`."""
    argv = [str(llamafactory_python()), "-m", "kueue_cohorts.trainer", "--checkpoint-root", str(root),
            "--run-name", run_name]
    return TrainerProcess(argv, trainer_env(
        KUEUE_COHORTS_RECIPE=f"llamafactory:{config}",
        KUEUE_COHORTS_RECIPE_CALLBACKS="kueue_cohorts.trainer.local.families:callbacks",
        HF_HOME=str(root / ".hf"), HF_DATASETS_CACHE=str(root / ".hf" / "datasets"), **env), cwd=ROOT)
