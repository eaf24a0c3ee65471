"""The settings check: shape, then every rule, before any resource is registered.

`load_settings` is what `__main__.py` calls once with the raw `kueue-cohorts:*` config:
1. shape (`components.settings.parse_settings`: types, names, enums, unknown keys, quantities);
2. the settings-only rules (`components.checks.settings_rules`: keys that only make sense together, names used twice);
3. the rule book (`policy/rules/book/`, the same rules the policy pack runs): the stack's objects are rendered
   (`components.model.render`) and judged with the stack's own pack config (`components.model.pack_config`); each
   finding is
   mapped back from (object, field) to the config key that wrote that field.
Every problem of 2 and 3 is reported at once, each with its exact key path, the value as written, the rule and its
fix. Mandatory rules are errors; advisory ones are returned as warnings.

`python -m kueue_cohorts.validate --stack NAME` checks stacks/Pulumi.NAME.yaml the same way without the engine
(exit 0 valid, 2 invalid); `--pack-config [--write]` prints (writes) policy/config/NAME.json.
"""
from __future__ import annotations

import gc
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence

from kueue_cohorts.components.checks import settings_rules, unqueued_rules
from kueue_cohorts.components.checks.chart_values import check_kueue_values
from kueue_cohorts.components.model.pack_config import pack_config
from kueue_cohorts.components.model.render import KeyPath, Rendered, RenderedStack, render
from kueue_cohorts.components.settings import (
    PROJECT,
    Settings,
    config_key,
    namespace_problems,
    parse_settings,
    secrets,
    stackfile,
)
from kueue_cohorts.components.settings.errors import Problem, SettingsError
from kueue_cohorts.policy.rules.book import run as run_rule_book
from kueue_cohorts.policy.rules.book import run_clusters
from kueue_cohorts.policy.rules.vocabulary.declaration import Declaration
from kueue_cohorts.policy.rules.vocabulary.multikueue import MANAGER
from kueue_cohorts.policy.rules.vocabulary.objects import KubeObject, from_resource
from kueue_cohorts.policy.rules.vocabulary.paths import parse_path
from kueue_cohorts.policy.rules.vocabulary.values import MISSING, Violation

_FIELD_NAME = re.compile(r"^[a-z][A-Za-z0-9]*$")


@dataclass(frozen=True)
class Validation:
    """The outcome of checking a stack config: `settings` (None when the shape is invalid), `problems` (errors:
    any makes the config invalid), `warnings` (advisory rules) and `rendered`, the objects the rule book judged
    (None when the stack was not rendered), which the program then registers (`components.model.assembly.assemble`)."""

    settings: Optional[Settings]
    problems: tuple[Problem, ...]
    warnings: tuple[Problem, ...]
    rendered: Optional[RenderedStack] = None


def as_objects(rendered: Sequence[Rendered]) -> list[KubeObject]:
    """The rendered objects as the pack sees them when the program registers them (`Rendered.type_token`: a patch
    is a `<Kind>Patch`; wire fields)."""
    out = []
    for index, item in enumerate(rendered):
        obj = from_resource(item.type_token, item.manifest, urn="", resource_name=f"rendered-{index}")
        if obj is not None:
            out.append(obj)
    return out


def key_of(item: Rendered, field: str) -> KeyPath:
    """The config key path that wrote `field` of `item`: the longest mapped prefix of the field path, with the rest
    of the path appended when it is made of plain field names (config keys follow Kueue's field names)."""
    best: Optional[str] = None
    for prefix in item.fields:
        if field == prefix or field.startswith(prefix + ".") or field.startswith(prefix + "["):
            if best is None or len(prefix) > len(best):
                best = prefix
    if best is None:
        return item.source
    rest = parse_path(field[len(best):])
    if rest and all(isinstance(part, str) and _FIELD_NAME.match(part) for part in rest):
        return tuple(item.fields[best]) + tuple(rest)
    return tuple(item.fields[best])


def value_at(raw: Mapping[str, Any], parts: KeyPath) -> Any:
    """The value the stack config has at `parts`, or MISSING."""
    node: Any = raw
    for part in parts:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return MISSING
    return node


def _problem(raw: Mapping[str, Any], rendered: Sequence[Rendered], by_ref: Mapping[tuple[Any, ...], int],
             violation: Violation) -> Problem:
    subject = violation.subject
    index = by_ref.get((subject.kind, subject.namespace, subject.name)) if subject else None
    if index is None:
        return Problem(f"{PROJECT}:*", violation.value, violation.rule or violation.message, violation.fix or
                       "correct the stack config", violation.policy)
    parts = key_of(rendered[index], violation.field)
    written = value_at(raw, parts)
    shown = written if written is not MISSING else ("<absent>" if violation.value is MISSING else violation.value)
    return Problem(config_key(f"{PROJECT}:{parts[0]}", *parts[1:]), shown, violation.rule, violation.fix,
                   violation.policy)


def judge(settings: Settings, raw: Mapping[str, Any],
          namespace_owner: Optional[str] = None) -> tuple[list[Problem], list[Problem]]:
    """Judge the rendered stack (`render_stack(settings, namespace_owner)`, the objects the program registers) with
    the rule book. Returns (problems of mandatory rules, warnings of advisory ones), each mapped to its config key;
    a rendering failure is one problem, never an exception."""
    problems, warnings, _ = _judged(settings, raw, namespace_owner)
    return problems, warnings


def _judged(settings: Settings, raw: Mapping[str, Any],
            namespace_owner: Optional[str]) -> tuple[list[Problem], list[Problem], Optional[RenderedStack]]:
    """`judge`, and the RenderedStack it judged (None when the stack cannot be rendered)."""
    try:
        stack = render(settings, namespace_owner)
    except (ValueError, KeyError) as err:
        return [Problem(f"{PROJECT}:*", "<stack>", f"the stack cannot be rendered: {err}",
                        "correct the stack config")], [], None
    rendered = stack.objects()
    config = pack_config(settings)
    manager = as_objects(rendered)
    problems, warnings = judge_objects(rendered, raw, config)
    seen: set[tuple[str, str, str]] = {(p.key, p.rule, p.fix) for p in problems + warnings}
    for worker in stack.workers:  # each worker's cohorts with that worker's nodes (multiKueue.workers[].nodePools)
        objects = worker.objects()
        _collect(raw, objects, run_rule_book(as_objects(objects), pack_config(worker.settings)),
                 f"on worker '{worker.name}': ", problems, warnings, seen,
                 f"kueue-cohorts:multiKueue.workers[{worker.index}].nodePools")
    if stack.workers:
        clusters = {MANAGER: manager, **{w.name: as_objects(w.objects()) for w in stack.workers}}
        _collect(raw, rendered, run_clusters(clusters, config), "", problems, warnings, seen)
    return problems, warnings, stack


def judge_objects(rendered: Sequence[Rendered], raw: Mapping[str, Any],
                  config: Mapping[str, Any]) -> tuple[list[Problem], list[Problem]]:
    """Judge `rendered` (some or all of a stack's objects) with the rule book and the pack config `config`
    (`components.model.pack_config.pack_config`, or {} for the schema defaults). Returns (problems of mandatory
    rules, warnings of advisory ones), each mapped back to the config key that wrote the field (`Rendered.fields`),
    the value shown as `raw` has it; one problem per key, rule and fix."""
    problems: list[Problem] = []
    warnings: list[Problem] = []
    _collect(raw, rendered, run_rule_book(as_objects(rendered), config), "", problems, warnings, set())
    return problems, warnings


def _collect(raw: Mapping[str, Any], rendered: Sequence[Rendered], found: Sequence[tuple[Declaration, Violation]],
             where: str, problems: list[Problem], warnings: list[Problem], seen: set[tuple[str, str, str]],
             nodes_key: str = "") -> None:
    """Map the rule book's findings on the objects `rendered` (of one cluster) to Problems at the config keys that
    wrote them (`where` prefixes the rule: a worker's cluster, whose nodes a fix names at `nodes_key`), into
    `problems` (mandatory rules) and `warnings`; the same key, rule and fix once (`seen`)."""
    by_ref: dict[tuple[Any, ...], int] = {}
    twice: set[tuple[Any, ...]] = set()
    for index, item in enumerate(rendered):
        ref = (item.kind, item.namespace, item.name)
        if ref in by_ref:
            twice.add(ref)  # a name the stack uses twice: settings_rules reports it; findings on it are ambiguous
        by_ref.setdefault(ref, index)
    for rule, violation in found:
        subject = violation.subject
        if subject is not None and (subject.kind, subject.namespace, subject.name) in twice:
            continue
        problem = _problem(raw, rendered, by_ref, violation)
        if where:
            fix = problem.fix.replace(f"{PROJECT}:nodePools", nodes_key) if nodes_key else problem.fix
            problem = Problem(problem.key, problem.value, where + problem.rule, fix, problem.policy)
        if (problem.key, problem.rule, problem.fix) in seen:
            continue  # the same key and rule found on several objects (a runtime per training namespace)
        seen.add((problem.key, problem.rule, problem.fix))
        (problems if rule.mandatory else warnings).append(problem)


MAX_VALUES = 200_000
"""The most values (after YAML aliases are expanded) a stack config may hold: 10,000 tenants take about 100,000."""
MAX_DEPTH = 32
"""The deepest nesting a stack config may have (ours is at most 8 deep)."""


_SCALARS = frozenset({str, int, float, bool, type(None)})


def size_problems(raw: Mapping[str, Any]) -> list[Problem]:
    """One problem per top-level key whose value is too big or too deep to check: a YAML alias bomb (shared
    references that expand to billions of values) or pathological nesting. The walk stops at the first limit, so this
    takes microseconds whatever the input."""
    problems = []
    budget = MAX_VALUES
    for top, value in raw.items():
        stack: list[tuple[Any, int]] = [(value, 1)]
        while stack:
            node, depth = stack.pop()
            budget -= 1
            if budget < 0 or depth > MAX_DEPTH:
                if budget < 0:
                    rule = (f"the value holds more than {MAX_VALUES} values once YAML aliases are expanded, which no "
                            "stack needs (a YAML alias bomb?)")
                    fix = "write the value out without aliases, at its real size"
                else:
                    rule = f"the value is nested more than {MAX_DEPTH} levels deep, which no stack key is"
                    fix = "write the key in the shape the configuration reference shows"
                problems.append(Problem(config_key(f"{PROJECT}:{top}"), "<too large to show>", rule, fix))
                return problems
            if type(node) in _SCALARS:
                continue  # typing.Mapping's isinstance is slow, and nearly every value is a scalar
            if isinstance(node, Mapping):
                stack.extend((child, depth + 1) for child in node.values())
            elif isinstance(node, (list, tuple)):
                stack.extend((child, depth + 1) for child in node)
    return problems


@contextmanager
def cyclic_collector_paused() -> Iterator[None]:
    """Suspend Python's cyclic garbage collector (`gc.disable`) for the duration; restore its previous state after,
    also on an exception.

    Why: the check builds a large graph that lives until it returns (every rendered manifest, its provenance, the
    rule book's objects and per-run facts: about 50 container objects per tenant) and contains no reference cycles
    (measured: `gc.collect()` after a check run with the collector paused frees 0 objects), so reference counting
    frees all of it. Each full collection the allocations trigger meanwhile walks the whole graph and frees nothing:
    at 10,000 tenants 6-7 of them took 1.2-2.1 s of a 3.7-5.4 s check, and more of it the more tenants (the check
    was no longer linear). Any cycle made meanwhile is collected by the next automatic collection after.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def validate(raw: Mapping[str, Any], secret_paths: Sequence[KeyPath] = (),
             namespace_owner: Optional[str] = None) -> Validation:
    """Check a stack's raw `kueue-cohorts:*` config (key without prefix -> parsed YAML value) completely.

    Args:
        raw: the config; a stack file's `{secure: ...}` values are found in it (components.settings.secrets).
        secret_paths: further key paths (top-level key first) whose values are secret although `raw` holds their
            plaintext (the program's decrypted config: components.settings.secrets.locate).
        namespace_owner: the stack's ownership mark (`components.model.kueue.namespace_owner`), so that the judged
            Namespaces are the registered ones; None when the Pulumi stack is not known.
    Returns: a Validation; every secret value is one problem (components.settings.secrets.problem), and the rest of the
    config is checked with the secret values masked, so no message shows a secret's text. Raises nothing for any
    input: malformed values become problems. Python's cyclic collector is paused meanwhile (see
    `cyclic_collector_paused`).
    """
    with cyclic_collector_paused():
        return _validate(raw, secret_paths, namespace_owner)


def _validate(raw: Mapping[str, Any], secret_paths: Sequence[KeyPath], namespace_owner: Optional[str]) -> Validation:
    too_big = size_problems(raw)
    if too_big:
        return Validation(None, tuple(too_big), ())
    paths = list(dict.fromkeys([*secrets.secure_paths(raw), *secret_paths]))
    refused = [secrets.problem(path) for path in paths]
    if paths:
        raw = secrets.masked(raw, paths)
    try:
        settings = parse_settings(raw)
    except SettingsError as err:
        return Validation(None, tuple(refused + [p for p in err.problems if not secrets.covers(paths, p.key)]), ())
    problems = settings_rules.check(settings) + check_kueue_values(settings) + unqueued_rules.check(settings)
    found, warnings, rendered = _judged(settings, raw, namespace_owner)
    warnings = warnings + unqueued_rules.advise(settings)
    problems = refused + [p for p in problems + found if not secrets.covers(paths, p.key)]
    return Validation(settings, tuple(problems), tuple(w for w in warnings if not secrets.covers(paths, w.key)),
                      rendered)


def load_settings(raw: Mapping[str, Any]) -> Settings:
    """Validate a stack's `kueue-cohorts:*` config.

    Args:
        raw: key (without the `kueue-cohorts:` prefix, camelCase, e.g. "inferenceTraining") -> parsed YAML value.
    Returns:
        The frozen, typed Settings with canonical quantities and defaults applied.
    Raises:
        SettingsError: listing every problem (key path, value, rule, fix): shape problems first; once the shape is
        valid, the settings-only rules and the rule book's findings together.
    """
    result = validate(raw)
    if result.problems or result.settings is None:
        raise SettingsError(result.problems)
    return result.settings


def load_stack_file(path: Path) -> Settings:
    """Load and validate a stack file (stacks/Pulumi.<stack>.yaml): the keys of a misspelled config namespace
    (`components.settings.namespace_problems`) and every problem of the `kueue-cohorts:*` keys in one SettingsError.
    Raises SettingsError, stackfile.StackFileError, OSError."""
    return check_stack_file(path)[0]


def check_stack_file(path: Path, namespace_owner: Optional[str] = None) -> tuple[Settings, RenderedStack]:
    """`load_stack_file`, and the RenderedStack the check judged (rendered with `namespace_owner`, as `validate`), for
    a caller that goes on with the stack's objects without rendering again. Raises as `load_stack_file`."""
    doc = stackfile.read(Path(path))
    result = validate(stackfile.project_config(doc, PROJECT), namespace_owner=namespace_owner)
    problems = [*namespace_problems(doc), *result.problems]
    if problems or result.settings is None or result.rendered is None:
        raise SettingsError(problems)
    return result.settings, result.rendered
