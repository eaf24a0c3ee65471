"""Loading the stack config: raw `kueue-cohorts:*` keys -> `Settings`, or one `SettingsError` listing every
problem with its key path, value, rule and fix (pydantic's errors translated to config key paths).
"""
from __future__ import annotations

import difflib
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Mapping, Sequence, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ValidationError,
)

from kueue_cohorts.components.settings import stackfile
from kueue_cohorts.components.settings.base import _PATTERNS, PROJECT
from kueue_cohorts.components.settings.errors import Problem, SettingsError
from kueue_cohorts.components.settings.root import Settings
from kueue_cohorts.components.settings.runtime import (
    ENV_VALUE_TAGS,
    IMAGE_FIX,
)

# --- loading ---------------------------------------------------------------------------------------------------------

_FIXES = {
    "extra_forbidden": "remove the key or correct its spelling",
    "missing": "add the key",
    "enum": "use exactly one of the allowed values (Kueue's enums are case-sensitive)",
    "literal_error": "use exactly one of the allowed values (case-sensitive)",
    "string_pattern_mismatch": "use a DNS-1123 name: lower-case letters, digits and '-', starting and ending "
    "with a letter or digit",
    "string_too_long": "shorten the value",
    "too_short": "add at least one entry",
    "greater_than_equal": "raise the value",
    "less_than": "lower the value", "less_than_equal": "lower the value",
    "validation_actions": "write [Deny] (refuse) or [Warn, Audit] (first rollout: warn and record)",
    "no_identity": "name the user or group of the kubeconfig that runs pulumi up",
    "value_error": "write a non-negative Kubernetes quantity such as 4, \"500m\" or \"8Gi\"",
    "dict_type": "write a mapping (key: value)",
    "list_type": "write a list",
    "int_type": "write a whole number", "int_parsing": "write a whole number",
    "int_from_float": "write a whole number",
    "bool_type": "write true or false", "bool_parsing": "write true or false",
    "string_type": "write a string (quote it)",
    "float_type": "write a number", "float_parsing": "write a number",
    "int_or_percent": "write a pod count such as 0 or 1, or a percentage such as \"25%\"",
    "env_value": "write the value as a string (quoted), or reference a Secret: {secretKeyRef: {name: <secret>, "
    "key: <key>}}",
    "rolling_update": "use maxSurge 0 with maxUnavailable 1 (one replica down while it is replaced), or keep a "
    "surge with maxUnavailable 0 and reserve its headroom in nominalQuota",
}


_MISSING_FIXES = {f"{PROJECT}:trainingRuntime.image": IMAGE_FIX}
"""The fix of a required key whose value the user must choose, by key path (others: "add the key")."""


def config_key(base: str, *parts: Any) -> str:
    """A config key path for messages: `config_key("kueue-cohorts:sharedPool", "tenants", 0, "floor", "nvidia.com/gpu")`
    -> `kueue-cohorts:sharedPool.tenants[0].floor["nvidia.com/gpu"]`."""
    path = base
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif "/" in str(part) or "." in str(part):
            path += f'["{part}"]'
        else:
            path += f".{part}"
    return path


def stack_key(top: str, *parts: Any) -> str:
    """The config key path of a setting, as every message prints it: `stack_key("sharedPool", "tenants", 0, "floor",
    "nvidia.com/gpu")` -> `kueue-cohorts:sharedPool.tenants[0].floor["nvidia.com/gpu"]` (top: the key under the
    project's namespace; parts: mapping keys and list indexes below it)."""
    return config_key(f"{PROJECT}:{top}", *parts)


def _value_at(raw: Mapping[str, Any], loc: tuple[Any, ...]) -> Any:
    node: Any = raw
    for part in loc:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return "<absent>"
    return node


def _by_parent(errors: Sequence[Mapping[str, Any]], kind: str) -> dict[tuple[Any, ...], list[str]]:
    out: dict[tuple[Any, ...], list[str]] = {}
    for item in errors:
        if item["type"] == kind and item["loc"]:
            out.setdefault(tuple(item["loc"][:-1]), []).append(str(item["loc"][-1]))
    return out


def _known_keys(loc: Sequence[Any]) -> list[str]:
    """The config keys (aliases) of the model at pydantic error location `loc` (the parent of an unknown key),
    walking Settings through nested models, lists (an int part), dicts (a key part) and Optional/Union members.
    Empty when the location is not a model (a dict of free keys such as `labels`)."""
    annotations: list[Any] = [Settings]
    for part in loc:
        following: list[Any] = []
        for annotation in _unwrap(annotations):
            if isinstance(annotation, type) and issubclass(annotation, BaseModel) and isinstance(part, str):
                following += [f.annotation for name, f in annotation.model_fields.items()
                              if part in (name, f.alias)]
            elif get_origin(annotation) is list and isinstance(part, int):
                following += list(get_args(annotation)[:1])
            elif get_origin(annotation) is dict:
                following += list(get_args(annotation)[1:2])
        annotations = following
    return sorted({f.alias or name for annotation in _unwrap(annotations)
                   if isinstance(annotation, type) and issubclass(annotation, BaseModel)
                   for name, f in annotation.model_fields.items()})


def _unwrap(annotations: Sequence[Any]) -> list[Any]:
    """`annotations` with Optional / Union / Annotated opened into their member types."""
    out: list[Any] = []
    for annotation in annotations:
        origin = get_origin(annotation)
        if origin is Annotated:
            out += _unwrap(get_args(annotation)[:1])
        elif origin in (Union, UnionType):
            out += _unwrap([a for a in get_args(annotation) if a is not type(None)])
        else:
            out.append(annotation)
    return out


def _internal(part: Any) -> bool:
    """A part of pydantic's error location that is no config key: a validator's `function-...` or a union tag of
    runtime_settings.EnvValue."""
    return isinstance(part, str) and (part.startswith("function-") or part in ENV_VALUE_TAGS)


def _shape_problems(err: ValidationError, raw: Mapping[str, Any]) -> list[Problem]:
    """Turn pydantic's errors into Problems. A misspelt required key (an unknown key next to a missing one of a
    similar name) is reported once, with the key it probably meant."""
    problems = []
    errors = err.errors()
    missing, extra = _by_parent(errors, "missing"), _by_parent(errors, "extra_forbidden")
    for item in errors:
        loc = tuple(part for part in item["loc"] if not _internal(part))
        if not loc:
            problems.append(Problem(f"{PROJECT}:*", raw, item["msg"], "check the stack config"))
            continue
        top, rest, parent, name = str(loc[0]), loc[1:], tuple(item["loc"][:-1]), str(item["loc"][-1])
        value = item.get("input") if item["type"] != "missing" else "<absent>"
        rule = item["msg"].replace("Value error, ", "")
        fix = _FIXES.get(item["type"], "correct the value")
        if " Fix: " in rule:  # our own validators carry their fix
            rule, fix = rule.split(" Fix: ", 1)
        if item["type"] == "missing" and stack_key(top, *rest) in _MISSING_FIXES:
            fix = _MISSING_FIXES[stack_key(top, *rest)]
        if item["type"] == "missing" and difflib.get_close_matches(name, extra.get(parent, []), n=1):
            continue  # reported once, as the misspelt key
        if item["type"] == "extra_forbidden":
            value = _value_at(raw, loc)
            # A missing key of a similar name first (the typo of a required key), then any key the model knows.
            close = (difflib.get_close_matches(name, missing.get(parent, []), n=1)
                     or difflib.get_close_matches(name, _known_keys(parent), n=1))
            if close:
                rule, fix = "unknown key (a typo?)", f"did you mean '{close[0]}'? Rename the key"
        if item["type"] == "string_pattern_mismatch":
            pattern = item.get("ctx", {}).get("pattern")
            if pattern in _PATTERNS:
                rule, fix = _PATTERNS[pattern]
        problems.append(Problem(stack_key(top, *rest), value, rule, fix))
    return problems


def parse_settings(raw: Mapping[str, Any]) -> Settings:
    """Parse a stack's `kueue-cohorts:*` config into Settings: shape only (types, names, enums, unknown keys,
    quantities). The judgement (the rule book and the settings-only rules) is
    `components.checks.validation.load_settings`.

    Args:
        raw: key (without the `kueue-cohorts:` prefix, camelCase, e.g. "inferenceTraining") -> parsed YAML value.
    Returns:
        The frozen, typed Settings with canonical quantities and defaults applied.
    Raises:
        SettingsError: listing every shape problem (key path, value, rule, fix).
    """
    try:
        return Settings.model_validate(dict(raw))
    except ValidationError as err:
        raise SettingsError(_shape_problems(err, raw)) from None


def _near(namespace: str, project: str) -> bool:
    """Whether ``namespace`` reads as a misspelling of ``project`` (same letters but for case, ``_``/``-``, or a
    difflib similarity of 0.8 and more: ``kueue-cohort``, ``kueue_cohorts``, ``Kueue-Cohorts``, ``kueue-cohrts``)."""
    def plain(text: str) -> str:
        return text.lower().replace("_", "").replace("-", "")
    return plain(namespace) == plain(project) or difflib.SequenceMatcher(None, namespace.lower(),
                                                                         project).ratio() >= 0.8


def namespace_problems(doc: Mapping[str, Any], project: str = PROJECT) -> list[Problem]:
    """The keys of a parsed stack file's ``config`` whose namespace is a misspelling of the project's (``_near``):
    Pulumi reads ``<namespace>:<name>`` keys, and the program reads only ``kueue-cohorts:*`` ones
    (``pulumi.Config("kueue-cohorts")``), so ``kueue-cohort:inferenceTraining`` would be ignored without a word and
    the stack deployed without that setting. One Problem per such key (key as written, its value, the rule, the
    key to write instead). Other namespaces (``kubernetes:``, ``pulumi:``, a provider's) are left alone."""
    found: list[Problem] = []
    for key, value in (doc.get("config") or {}).items():
        if not isinstance(key, str) or ":" not in key:
            continue
        namespace, name = key.split(":", 1)
        if namespace != project and _near(namespace, project):
            found.append(Problem(
                key, value, f"the config namespace {namespace!r} is not this project's ({project!r}): the program "
                f"reads only {project}:* keys, so this key would be ignored and its setting silently lost",
                f"rename the key to `{project}:{name}`"))
    return found


def raw_from_stack_file(path: Path) -> dict[str, Any]:
    """Read the `kueue-cohorts:*` keys of a stack file (stacks/Pulumi.<stack>.yaml) into the shape `load_settings`
    takes, through the one stack-file reader (`components.settings.stackfile`). Keys of other namespaces (e.g.
    `kubernetes:`) are ignored.

    Raises:
        stackfile.StackFileError: a ValueError, `file:line:col: message`.
        SettingsError: a key's namespace is a misspelling of the project's (`namespace_problems`), every such key.
    """
    doc = stackfile.read(path)
    typos = namespace_problems(doc)
    if typos:
        raise SettingsError(typos)
    return stackfile.project_config(doc, PROJECT)


def config_keys() -> list[str]:
    """The top-level stack config keys (without the `kueue-cohorts:` prefix, camelCase), in schema order."""
    return [field.alias or name for name, field in Settings.model_fields.items()]
