"""WorkloadPriorityClass values (Kueue v0.19.2 `apis/kueue/v1beta2/workloadpriorityclass_types.go`: top-level
`value`, int32).
"""
from __future__ import annotations

from typing import Any, Optional

from .declaration import mapping, names

TRAINING_PRIORITY_CLASSES = names(
    "trainingPriorityClasses",
    "WorkloadPriorityClass names the stack declares for training (ranked below inference; every other class at or "
    "above inference is judged as one training namespaces may name).")
PRIORITY_CLASSES = mapping(
    "priorityClasses", {"type": "integer"},
    "WorkloadPriorityClasses that exist in the cluster but not in this stack: name -> value.")


def priority_value(raw: Any) -> Optional[int]:
    """A WorkloadPriorityClass value as an int (JSON numbers arrive as floats; digit strings accepted), or None."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)) and float(raw).is_integer():
        return int(raw)
    if isinstance(raw, str) and raw.strip().lstrip("-").isdigit():
        return int(raw)
    return None
