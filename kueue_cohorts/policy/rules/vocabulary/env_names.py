"""The environment variables the checkpoint-safe training runtime sets itself, declared once: the settings check
(`components/settings/runtime.py`, `trainingRuntime.env`) and the rule book's TRAINJOB_RESERVED_ENV
(`trainjob_reserved_env.py`, a TrainJob's `spec.trainer.env`) read them here. No SDK is loaded here.
"""
from __future__ import annotations

__all__ = ["RESERVED_ENV", "RESERVED_PREFIXES", "is_reserved"]

RESERVED_ENV = frozenset(
    {"PYTHONPATH", "KUEUE_COHORTS_RUN_NAME", "KUEUE_COHORTS_CHECKPOINT_ROOT", "KUEUE_COHORTS_RECIPE",
     "KUEUE_COHORTS_SAVE_STEPS"}
)
"""Environment variables the checkpoint-safe runtime sets itself (a stack or a TrainJob may not override them)."""
RESERVED_PREFIXES = ("PET_",)
"""Prefixes of the variables the Trainer's torch plugin sets (torchrun's PET_NNODES, PET_NODE_RANK, ...)."""


def is_reserved(name: object) -> bool:
    """Whether the environment variable ``name`` is reserved (RESERVED_ENV, or a RESERVED_PREFIXES prefix)."""
    return isinstance(name, str) and (name in RESERVED_ENV or name.startswith(RESERVED_PREFIXES))
