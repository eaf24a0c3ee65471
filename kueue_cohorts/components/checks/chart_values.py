"""`kueue-cohorts:kueue.values`: Helm values for Kueue's chart, checked against the chart's own values.yaml.

Kueue's chart (kubernetes-sigs/kueue v0.19.2 `charts/kueue`, pinned in toolchain/versions.toml [charts]) ships no
values.schema.json, so a value is checked against the structure of its `values.yaml`: every key must be one the
chart knows (below a mapping whose default is empty, such as nodeSelector or podAnnotations, any key goes), and a
scalar must have the type of the chart's default (a string where the default is a string, ...; a null default takes
anything). Two keys are refused because they would bypass the rule book: `managerConfig` (the manager Configuration
is built from `kueue-cohorts:kueue` and judged with the stack) and `controllerManager.featureGates` (the same gates
are `kueue.featureGates`, judged by the rules that read them). Pure but for reading values.yaml once.
"""
from __future__ import annotations

import difflib
from functools import cache
from pathlib import Path
from typing import Any, Mapping, Optional

import yaml

from kueue_cohorts import toolchain
from kueue_cohorts.components.settings import PROJECT, Settings, config_key
from kueue_cohorts.components.settings.errors import Problem

TOP = f"{PROJECT}:kueue"
ROUTED = {
    ("managerConfig",): "set the manager Configuration through kueue-cohorts:kueue (integrations, waitForPodsReady, "
                        "featureGates, manageJobsWithoutQueueName, resources), which the rule book judges; remove "
                        "kueue.values.managerConfig",
    ("controllerManager", "featureGates"): "write the gates as kueue.featureGates (name: true|false), which the rule "
                                           "book judges; remove kueue.values.controllerManager.featureGates",
}
"""Value paths a passthrough may not set, with the fix that routes them through the judged settings."""


@cache
def chart_defaults(chart: Optional[Path] = None) -> Mapping[str, Any]:
    """Return the Kueue chart's values.yaml (default: toolchain.chart_dir("kueue")). Raises toolchain.ToolchainError
    when the pinned Kueue module is not in the module cache, OSError / yaml.YAMLError when it cannot be read."""
    directory = chart or toolchain.chart_dir("kueue")
    return yaml.safe_load((directory / "values.yaml").read_text()) or {}


def _type_name(value: Any) -> str:
    return {bool: "true or false", int: "a whole number", float: "a number", str: "a string", list: "a list",
            dict: "a mapping"}.get(type(value), type(value).__name__)


def _same_kind(default: Any, value: Any) -> bool:
    if default is None or value is None:
        return True
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, (int, float)) and isinstance(value, (int, float)):
        return True
    if isinstance(default, dict):
        return isinstance(value, dict)
    if isinstance(default, list):
        return isinstance(value, list)
    return isinstance(value, type(default))


def value_problems(values: Mapping[str, Any], defaults: Mapping[str, Any]) -> list[Problem]:
    """Return a Problem for every key of ``values`` that the chart's ``defaults`` (its values.yaml) do not know, every
    scalar of another type than the default, and every ROUTED path; keys as `kueue-cohorts:kueue.values.<path>`."""
    found: list[Problem] = []

    def walk(given: Mapping[str, Any], known: Mapping[str, Any], path: tuple[str, ...]) -> None:
        for name, value in given.items():
            here = path + (str(name),)
            where = config_key(TOP, "values", *here)
            if here in ROUTED:
                found.append(Problem(where, value, "this chart value would bypass the rule book", ROUTED[here]))
                continue
            if not known and path:  # a free mapping of the chart (nodeSelector, podAnnotations, ...)
                continue
            if name not in known:
                close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1)
                fix = (f"did you mean '{close[0]}'? Rename the key" if close else
                       "remove the key, or use one of: " + ", ".join(sorted(str(k) for k in known)))
                found.append(Problem(where, value, "Kueue's chart (v0.19.2 values.yaml) has no such value", fix))
                continue
            default = known[name]
            if not _same_kind(default, value):
                found.append(Problem(where, value, f"the chart's value is {_type_name(default)} (values.yaml "
                                                   f"default {default!r})", f"write {_type_name(default)}"))
            elif isinstance(default, dict) and isinstance(value, dict):
                walk(value, default, here)

    walk(values, defaults, ())
    return found


def check_kueue_values(settings: Settings) -> list[Problem]:
    """The settings check of `kueue.values`: only with `kueue.install` (the chart is installed only then), checked
    against the pinned chart's values.yaml; fails closed when that file cannot be read."""
    values = settings.kueue.values
    if not values:
        return []
    where = config_key(TOP, "values")
    if not settings.kueue.install:
        return [Problem(where, values, "chart values apply only when the stack installs Kueue's chart",
                        "set kueue.install: true, or remove kueue.values")]
    try:
        defaults = chart_defaults()
    except (toolchain.ToolchainError, OSError, yaml.YAMLError) as err:
        return [Problem(where, "<set>", f"Kueue's chart values.yaml cannot be read to check them ({err})",
                        "run `kueue-cohorts toolchain` so the pinned Kueue Go module is in the module cache, or "
                        "remove kueue.values")]
    return value_problems(values, defaults)


def merged(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``theirs`` (the user's checked values) deep-merged under ``ours`` (the program's values win)."""
    out: dict[str, Any] = {k: v for k, v in theirs.items()}
    for name, value in ours.items():
        if isinstance(value, dict) and isinstance(out.get(name), dict):
            out[name] = merged(value, out[name])
        else:
            out[name] = value
    return out
