"""One error type for a bad stack config: every problem at once, each with key, value, rule and fix."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the stack config.

    key: the config key path, e.g. `kueue-cohorts:inferenceTraining.inference.borrowingLimit["nvidia.com/gpu"]`.
    value: the offending value as written (or "<absent>"). rule: what must hold, and why (Kueue semantics).
    fix: what to write instead.
    """

    key: str
    value: Any
    rule: str
    fix: str

    def __str__(self) -> str:
        try:
            shown = json.dumps(self.value, default=str)
        except (TypeError, ValueError):
            shown = repr(self.value)
        if len(shown) > 120:
            shown = shown[:117] + "..."
        return f"{self.key} = {shown}: {self.rule}. Fix: {self.fix}."


class SettingsError(ValueError):
    """The stack config is invalid. `problems` lists every problem; str() is one message with one line each.

    Raised before any resource is registered, so nothing is half-applied.
    """

    def __init__(self, problems: Sequence[Problem]):
        self.problems = tuple(problems)
        count = len(self.problems)
        lines = [f"invalid stack config: {count} problem{'s' if count != 1 else ''}"]
        lines += [f"  - {problem}" for problem in self.problems]
        super().__init__("\n".join(lines))
