"""The scratch project of deploy.scratch as the integration suites use it, plus their assertion helper."""

from __future__ import annotations

import json
from typing import Any

from kueue_cohorts.deploy.scratch import PROJECT, ROOT, STACKS, Project, manifests, offline_config

__all__ = ["PROJECT", "ROOT", "STACKS", "Project", "dump", "manifests", "offline_config"]


def dump(obj: Any) -> str:
    """Return ``obj`` as indented JSON (assertion messages)."""
    return json.dumps(obj, indent=2, sort_keys=True, default=str)
