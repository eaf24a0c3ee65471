"""The trainer suite needs torch and transformers (requirements-trainer.txt): without them it fails, never skips."""
import importlib

import pytest


@pytest.fixture(scope="session", autouse=True)
def _training_stack():
    missing = []
    for module in ("torch", "transformers", "accelerate", "safetensors"):
        try:
            importlib.import_module(module)
        except ImportError as err:
            missing.append(f"{module} ({err})")
    if missing:
        pytest.fail(
            "the trainer suite needs " + ", ".join(missing)
            + ": run `pip install --no-deps -r requirements-trainer.txt` in the venv (make test does)",
            pytrace=False,
        )
