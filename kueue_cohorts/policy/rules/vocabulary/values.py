"""Reading resource properties safely: field paths, values unknown at preview, and the Violation record.

At `pulumi preview` the pulumi-policy SDK hands the rules an "unknown-checking proxy" over the properties
(`pulumi_policy.proxy.unknown_checking_proxy`): reading a value that is not known yet (an Output of a resource
still to be created) raises `pulumi_policy.proxy.UnknownValueError` carrying the property path. The SDK would
turn that exception into an ADVISORY "can't run policy" note, i.e. a mandatory policy would silently pass. The
rules therefore read properties only through the helpers here and let `UnknownValueError` escape to the caller,
which reports a violation that names the field (fail closed; see `catalog.py` and `unknown_violation`).

Plain dicts and lists (unit tests, YAML) work the same way: the proxies are `Mapping`/`Sequence` objects.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from pulumi_policy.proxy import UnknownValueError

from .paths import format_path

__all__ = [
    "MISSING",
    "ObjectRef",
    "UnknownValueError",
    "Violation",
    "as_list",
    "as_map",
    "format_path",
    "get",
    "is_map",
    "is_list",
    "iter_items",
]


class _Missing:
    """Sentinel for a field that is absent (or null): Kueue's "not set", never the same as 0."""

    _instance: Optional[_Missing] = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()


@dataclass(frozen=True)
class ObjectRef:
    """Which object a finding is about: its kind, namespace (None when cluster-scoped or not set) and name."""

    kind: str
    namespace: Optional[str]
    name: str


@dataclass(frozen=True)
class Violation:
    """One finding of the rule book.

    The pack reports `message`; the program's settings check maps (`subject`, `field`) back to the stack config key
    that produced that field and prints `rule` and `fix` next to it, so both layers speak from one rule.

    Attributes:
        message: a full sentence naming the resource and the fix ("The ClusterQueue 'x' must ...").
        urn: the Pulumi URN of the offending resource, or None for a stack-wide finding.
        subject: the object at fault (None for findings about the policy config itself).
        field: the field path inside `subject`, kubectl style ("spec.preemption.reclaimWithinCohort"); "" for the
            object as a whole.
        value: the offending value as the object has it (MISSING when the field is absent).
        rule: what must hold and why, without the object's name (a clause: "an inference ClusterQueue must ...").
        fix: what to write instead (a clause).
        policy: the name of the policy (rule) that found it, e.g. "INFERENCE_BORROWING_LIMIT_ZERO".
    """

    message: str
    urn: Optional[str] = None
    subject: Optional[ObjectRef] = None
    field: str = ""
    value: Any = dataclasses.field(default=None, repr=False, compare=False)
    rule: str = ""
    fix: str = ""
    policy: str = ""


_SCALARS = frozenset({str, int, float, bool, type(None), bytes})
"""Exact types that are never a map or a list (a subclass still goes through the ABC checks)."""


def is_map(value: Any) -> bool:
    """Return True for a JSON object (a dict or the SDK's dict proxy)."""
    kind = type(value)  # plain JSON types first: the ABC checks are slow, and these are nearly every value
    if kind is dict:
        return True
    if kind in _SCALARS or kind is list:
        return False
    return isinstance(value, Mapping)


def is_list(value: Any) -> bool:
    """Return True for a JSON array (a list or the SDK's list proxy); strings are not lists."""
    kind = type(value)
    if kind is list:
        return True
    if kind in _SCALARS or kind is dict:
        return False
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def get(obj: Any, *path: Any) -> Any:
    """Follow `path` (keys and list indexes) into nested properties.

    Args:
        obj: a mapping/sequence (or proxy) of resource properties.
        path: keys (str) and indexes (int).
    Returns:
        The value, or MISSING when a step is absent, null, or of the wrong shape.
    Raises:
        UnknownValueError: a value on the way is unknown at preview (the SDK proxy raises it).
    """
    current = obj
    for step in path:
        if type(current) is dict and type(step) is str:  # plain JSON (the program's objects): the common case
            current = current.get(step)
            if current is None:
                return MISSING
            continue
        if isinstance(step, int):
            if not is_list(current) or not -len(current) <= step < len(current):
                return MISSING
            current = current[step]
        else:
            if not is_map(current) or step not in current:
                return MISSING
            current = current[step]
        if current is None:
            return MISSING
    return current


def as_map(value: Any) -> Mapping[str, Any]:
    """Return `value` if it is a mapping, else an empty dict (absent, null or wrong shape)."""
    return value if is_map(value) else {}


def as_list(value: Any) -> Sequence[Any]:
    """Return `value` if it is a list, else an empty list (absent, null or wrong shape)."""
    return value if is_list(value) else []


def iter_items(value: Any) -> Iterator[tuple[str, Any]]:
    """Iterate over (key, value) of a mapping; nothing for non-mappings. Unknown values raise UnknownValueError."""
    if is_map(value):
        for key in value:
            yield key, value[key]
