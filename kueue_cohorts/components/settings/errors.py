"""One error type for a bad stack config: every problem at once, each with key, value, rule and fix."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the stack config.

    key: the config key path, e.g. `kueue-cohorts:inferenceTraining.inference.borrowingLimit["nvidia.com/gpu"]`.
    value: the offending value as written (or "<absent>"). rule: what must hold, and why (Kueue semantics).
    fix: what to write instead. policy: the rule book's policy name when the problem is a rule book finding (the
    same name the policy pack reports), "" for the settings-only rules.
    """

    key: str
    value: Any
    rule: str
    fix: str
    policy: str = field(default="", compare=False)

    def __str__(self) -> str:
        return f"{self.key} = {shown(self.value)}: {self.rule}. Fix: {self.fix}."


class _Full(Exception):
    """Raised inside `shown` once the output budget is spent."""


def shown(value: Any, limit: int = 120) -> str:
    """`value` as compact JSON, cut to `limit` characters ("..." at the end when cut).

    Bounded work whatever the value: the walk stops as soon as `limit` characters are written, so a YAML alias bomb
    (a value whose shared references expand to billions of nodes) or a deeply nested value prints in microseconds.
    Non-JSON values print as their str().
    """
    out: list[str] = []
    size = 0

    def put(text: str) -> None:
        nonlocal size
        out.append(text)
        size += len(text)
        if size > limit:
            raise _Full

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            put("{")
            for i, (k, v) in enumerate(node.items()):
                put((", " if i else "") + json.dumps(str(k)) + ": ")
                walk(v)
            put("}")
        elif isinstance(node, (list, tuple)):
            put("[")
            for i, item in enumerate(node):
                put(", " if i else "")
                walk(item)
            put("]")
        elif isinstance(node, (str, bool, int, type(None))):
            put(json.dumps(node))
        elif isinstance(node, float):
            put(json.dumps(node) if node == node and abs(node) != float("inf") else f'"{node}"')
        else:
            put(json.dumps(str(node)))

    try:
        walk(value)
    except (_Full, RecursionError):
        return "".join(out)[: limit - 3] + "..."
    return "".join(out)


def problems_message(what: str, problems: Sequence[Problem], note: str = "") -> str:
    """One message for a list of problems: a header `<what>: <N> problem(s)<note>`, then `  - <problem>` per
    problem (each Problem's str: key path, value, rule and fix), lines joined by newlines."""
    count = len(problems)
    lines = [f"{what}: {count} problem{'s' if count != 1 else ''}{note}"]
    lines += [f"  - {problem}" for problem in problems]
    return "\n".join(lines)


class SettingsError(ValueError):
    """The stack config is invalid. `problems` lists every problem; str() is one message with one line each.

    Raised before any resource is registered, so nothing is half-applied.
    """

    def __init__(self, problems: Sequence[Problem]):
        self.problems = tuple(problems)
        super().__init__(problems_message("invalid stack config", self.problems))
