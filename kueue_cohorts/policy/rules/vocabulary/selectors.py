"""Kubernetes label selectors (metav1.LabelSelector): shape, label syntax, matching and overlap.

Upstream:
- shape and syntax: k8s.io/apimachinery `pkg/apis/meta/v1/validation/validation.go` (ValidateLabelSelector,
  ValidateLabelSelectorRequirement, ValidateLabels) and `pkg/util/validation/validation.go` (IsQualifiedName,
  IsValidLabelValue, IsDNS1123Subdomain);
- semantics: `pkg/apis/meta/v1/helpers.go` LabelSelectorAsSelector: a nil selector selects nothing, an empty one
  (`{}`) everything; matchLabels and every matchExpression must all hold (In, NotIn, Exists, DoesNotExist; NotIn
  and DoesNotExist also hold when the key is absent).
Kueue reads ClusterQueue `spec.namespaceSelector` and the manager's `managedJobsNamespaceSelector` this way.

A selector here is the wire value: a mapping with `matchLabels` and/or `matchExpressions` (plain dicts or the
policy SDK's proxies), or None/MISSING for "not set". Reading a value unknown at preview raises
`UnknownValueError` (let it propagate to `objects.guarded`).

This module does not load the pulumi-policy SDK (it reads values through the `Mapping`/`Sequence` protocols only), so
the program's settings layer can use it to check a selector it has not rendered yet.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Iterable, Optional

from . import memo
from .paths import format_path

__all__ = [
    "NAME_LABEL",
    "OPERATORS",
    "Requirement",
    "can_overlap",
    "is_label_key",
    "is_label_value",
    "label_key_problem",
    "label_value_problem",
    "matches",
    "pins_names",
    "requirements",
    "selector_problems",
    "selects",
]

NAME_LABEL = "kubernetes.io/metadata.name"
"""The label the apiserver sets on every Namespace to its name (immutable; NamespaceDefaultLabelName)."""
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
"""metav1.LabelSelectorOperator values."""

_ABSENT: Any = type("_Absent", (), {"__repr__": lambda self: "absent", "__bool__": lambda self: False})()


def _is_map(value: Any) -> bool:
    """A JSON object (dict or the SDK's dict proxy)."""
    return type(value) is dict or isinstance(value, Mapping)  # dict first: the ABC check is slow


def _is_list(value: Any) -> bool:
    """A JSON array (list or the SDK's list proxy); strings are not lists."""
    return type(value) is list or (isinstance(value, Sequence) and not isinstance(value, (str, bytes)))


def _missing(value: Any) -> bool:
    """None, this module's absent marker, or `values.MISSING` (recognised by its class, not imported: values.py loads
    the SDK)."""
    return value is None or value is _ABSENT or type(value).__name__ == "_Missing"


def _get(obj: Any, key: str) -> Any:
    """`obj[key]`, or the absent marker when `obj` is no mapping, lacks `key` or holds null there (like
    `values.get`; an unknown value raises the SDK's UnknownValueError through the proxy)."""
    if not _is_map(obj) or key not in obj:
        return _ABSENT
    value = obj[key]
    return _ABSENT if value is None else value


_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME_FORMAT = ("alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character "
                "(e.g. 'MyName', 'my.name', '123-abc')")


def label_key_problem(text: Any) -> Optional[str]:
    """Why `text` is not a Kubernetes label key (a qualified name), or None when it is one.

    A label key is `[prefix/]name`: the optional prefix a DNS-1123 subdomain of at most 253 characters, the name
    1-63 characters of `_NAME_FORMAT` (k8s.io/apimachinery IsQualifiedName).
    """
    if not isinstance(text, str):
        return f"a label key must be a string, not {type(text).__name__}"
    parts = text.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return "the prefix part of a label key must be non-empty"
        if len(prefix) > 253:
            return "the prefix part of a label key must be no more than 253 characters"
        if not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            return ("the prefix part of a label key must be a lowercase DNS-1123 subdomain (lower case alphanumeric "
                    "characters, '-' or '.', starting and ending with an alphanumeric character, e.g. 'example.com')")
    else:
        return "a label key is a name with an optional DNS subdomain prefix and one '/' (e.g. 'example.com/MyName')"
    if not name:
        return "the name part of a label key must be non-empty"
    if len(name) > 63:
        return "the name part of a label key must be no more than 63 characters"
    if not _NAME.fullmatch(name):
        return f"the name part of a label key must consist of {_NAME_FORMAT}"
    return None


def label_value_problem(text: Any) -> Optional[str]:
    """Why `text` is not a Kubernetes label value, or None when it is one (k8s.io/apimachinery IsValidLabelValue:
    empty, or at most 63 characters of `_NAME_FORMAT`)."""
    if not isinstance(text, str):
        return f"a label value must be a string, not {type(text).__name__}"
    if len(text) > 63:
        return "a label value must be no more than 63 characters"
    if text and not _NAME.fullmatch(text):
        return f"a label value must be empty or consist of {_NAME_FORMAT}"
    return None


def is_label_key(text: Any) -> bool:
    """True when `text` is a valid label key (IsQualifiedName), e.g. "kueue.x-k8s.io/queue", "team"."""
    return label_key_problem(text) is None


def is_label_value(text: Any) -> bool:
    """True when `text` is a valid label value (IsValidLabelValue), e.g. "", "c12-inference-cq"."""
    return label_value_problem(text) is None


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def selector_problems(value: Any) -> list[tuple[str, str]]:
    """Every problem of a metav1.LabelSelector's shape and syntax, as the apiserver (and Kueue's webhook) sees it.

    Args:
        value: the wire value of the selector (a mapping); None/MISSING (not set) has no problems here, whether
            "not set" is allowed is the caller's rule.
    Returns:
        (field path suffix, problem) pairs in field order, e.g. ("matchLabels", "must be a map of label key to
        label value, not str"), ("matchExpressions[0].values", "must be non-empty for operator In"),
        ("matchExpressions[1].operator", "..."); the suffix is relative to the selector ("" for the selector
        itself) in `format_path` style. Empty when the selector is valid.
    Raises:
        UnknownValueError: a part of the selector is unknown at preview.
    """
    if _missing(value):
        return []
    if not _is_map(value):
        return [("", f"must be a label selector (a map with matchLabels and/or matchExpressions), not "
                     f"{type(value).__name__} {_show(value)}")]
    problems: list[tuple[str, str]] = []
    for key in value:
        if key not in ("matchLabels", "matchExpressions"):
            problems.append((format_path([key]), "is not a field of a label selector (only matchLabels and "
                                                 "matchExpressions are; the apiserver would drop it)"))
    labels = _get(value, "matchLabels")
    if labels is not _ABSENT:
        if not _is_map(labels):
            problems.append(("matchLabels", f"must be a map of label key to label value, not "
                                            f"{type(labels).__name__} {_show(labels)}"))
        else:
            for key in labels:
                where = format_path(["matchLabels", str(key)])
                key_problem = label_key_problem(key)
                if key_problem:
                    problems.append((where, f"has key {_show(key)}: {key_problem}"))
                value_problem = label_value_problem(labels[key])
                if value_problem:
                    problems.append((where, f"is {_show(labels[key])}: {value_problem}"))
    expressions = _get(value, "matchExpressions")
    if expressions is not _ABSENT:
        if not _is_list(expressions):
            problems.append(("matchExpressions", f"must be a list of {{key, operator, values}}, not "
                                                 f"{type(expressions).__name__} {_show(expressions)}"))
        else:
            for i, expr in enumerate(expressions):
                problems.extend(_expression_problems(expr, ["matchExpressions", i]))
    return problems


def _expression_problems(expr: Any, path: list[Any]) -> list[tuple[str, str]]:
    if not _is_map(expr):
        return [(format_path(path), f"must be a map {{key, operator, values}}, not {type(expr).__name__} "
                                    f"{_show(expr)}")]
    problems = []
    for key in expr:
        if key not in ("key", "operator", "values"):
            problems.append((format_path(path + [key]), "is not a field of a label selector requirement (only key, "
                                                        "operator and values are)"))
    key = _get(expr, "key")
    if key is _ABSENT:
        problems.append((format_path(path + ["key"]), "is required"))
    else:
        key_problem = label_key_problem(key)
        if key_problem:
            problems.append((format_path(path + ["key"]), f"is {_show(key)}: {key_problem}"))
    operator = _get(expr, "operator")
    values = _get(expr, "values")
    if operator not in OPERATORS:
        problems.append((format_path(path + ["operator"]),
                         f"is {'missing' if operator is _ABSENT else _show(operator)}: it must be one of "
                         f"{', '.join(OPERATORS)}"))
    where = format_path(path + ["values"])
    if values is not _ABSENT and not _is_list(values):
        problems.append((where, f"must be a list of label values, not {type(values).__name__} {_show(values)}"))
        return problems
    count = 0 if values is _ABSENT else len(values)
    if operator in ("In", "NotIn") and count == 0:
        problems.append((where, f"must be non-empty for operator {operator}"))
    if operator in ("Exists", "DoesNotExist") and count > 0:
        problems.append((where, f"must be empty for operator {operator}"))
    if values is not _ABSENT:
        for j, item in enumerate(values):
            value_problem = label_value_problem(item)
            if value_problem:
                problems.append((format_path(path + ["values", j]), f"is {_show(item)}: {value_problem}"))
    return problems


@dataclass(frozen=True, slots=True)
class Requirement:
    """One requirement of a selector in normal form: matchLabels `k: v` becomes (k, "In", {v}).

    Attributes:
        key: the label key. operator: one of OPERATORS, or any other text for an invalid operator (which matches
            nothing). values: the value set (empty for Exists/DoesNotExist).
    """

    key: str
    operator: str
    values: frozenset[str]

    def holds(self, labels: Mapping[str, str]) -> bool:
        """True when the label set `labels` satisfies this requirement."""
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        return False


def requirements(selector: Any) -> Optional[list[Requirement]]:
    """A selector as a list of requirements (all must hold); None for a missing selector (selects nothing).

    Malformed parts are read leniently and fail closed towards "matches nothing" only where the apiserver would
    refuse them anyway (selector_problems reports those): a non-map selector or non-map matchLabels -> a
    requirement that never holds; values that are not strings compare by their text.
    Parsed once per selector within a judgement of the stack (`memo.judging`: several rules read each
    ClusterQueue's selector); callers must not modify the list.
    Raises UnknownValueError for a value unknown at preview.
    """
    if _missing(selector):
        return None
    if not _is_map(selector):
        return [Requirement("", "Invalid", frozenset())]
    if type(selector) is dict and not selector:
        return []  # `{}`: no requirement (selects everything); nothing to parse or remember
    return memo.once("requirements", selector, lambda: _requirements(selector))


def _requirements(selector: Mapping[str, Any]) -> list[Requirement]:
    """`requirements` of a selector that is a map, parsed."""
    found: list[Requirement] = []
    labels = _get(selector, "matchLabels")
    if labels is not _ABSENT:
        if not _is_map(labels):
            found.append(Requirement("", "Invalid", frozenset()))
        else:
            for key in labels:
                found.append(Requirement(str(key), "In", frozenset([_text(labels[key])])))
    expressions = _get(selector, "matchExpressions")
    if expressions is not _ABSENT:
        if not _is_list(expressions):
            found.append(Requirement("", "Invalid", frozenset()))
        else:
            for expr in expressions:
                if not _is_map(expr):
                    found.append(Requirement("", "Invalid", frozenset()))
                    continue
                raw_values = _get(expr, "values")
                values = frozenset(_text(v) for v in raw_values) if _is_list(raw_values) else frozenset()
                found.append(Requirement(_text(_get(expr, "key")), _text(_get(expr, "operator")), values))
    return found


def _text(value: Any) -> str:
    if _missing(value):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def matches(selector: Any, labels: Mapping[str, str]) -> bool:
    """Whether `selector` selects an object carrying `labels`.

    Args:
        selector: a LabelSelector wire value; None/MISSING selects nothing, `{}` everything.
        labels: the object's labels (for a Namespace include `kubernetes.io/metadata.name: <name>`).
    Returns:
        True when every requirement holds. An invalid operator or shape matches nothing.
    Raises:
        UnknownValueError: a part of the selector is unknown at preview.
    """
    return selects(requirements(selector), labels)


def selects(reqs: Optional[Sequence[Requirement]], labels: Mapping[str, str]) -> bool:
    """`matches` of a selector already parsed with `requirements` (parse it once to test it against many label
    sets): False for None (a missing selector), else True when every requirement holds for `labels`."""
    if reqs is None:
        return False
    return all(req.holds(labels) for req in reqs)


def _satisfiable(reqs: Iterable[Requirement]) -> bool:
    """Whether some label set satisfies all `reqs` (keys are independent; label values are unbounded)."""
    by_key: dict[str, list[Requirement]] = {}
    for req in reqs:
        if req.operator not in OPERATORS:
            return False
        by_key.setdefault(req.key, []).append(req)
    for key_reqs in by_key.values():
        ops = {req.operator for req in key_reqs}
        if "DoesNotExist" in ops:
            if ops & {"In", "Exists"}:
                return False
            continue  # absent satisfies DoesNotExist and every NotIn
        excluded = frozenset().union(*(r.values for r in key_reqs if r.operator == "NotIn"))
        in_sets = [r.values for r in key_reqs if r.operator == "In"]
        if in_sets:
            allowed = frozenset.intersection(*in_sets) - excluded
            if not allowed:
                return False
        # Exists (with or without NotIn): some value outside the finite excluded set exists; NotIn alone: absent.
    return True


def can_overlap(a: Any, b: Any, namespaces: bool = False) -> bool:
    """Whether some object could be selected by both selectors (exact satisfiability of their conjunction).

    Args:
        a, b: LabelSelector wire values; None/MISSING selects nothing, `{}` everything.
        namespaces: judge Namespaces: every Namespace carries `kubernetes.io/metadata.name`, so a selector that
            requires its absence selects none.
    Returns:
        True when a label set exists that both select; False when none does (e.g. `{team: a}` and `{team: b}`, or
        `kubernetes.io/metadata.name In [x]` and `... In [y]`). An invalid operator selects nothing.
    Raises:
        UnknownValueError: a part of either selector is unknown at preview.
    """
    ra, rb = requirements(a), requirements(b)
    if ra is None or rb is None:
        return False
    extra = [Requirement(NAME_LABEL, "Exists", frozenset())] if namespaces else []
    return _satisfiable(ra + rb + extra)


def pins_names(selector: Any) -> Optional[frozenset[str]]:
    """The namespace names a selector can select at most, judged on `kubernetes.io/metadata.name` only.

    Args:
        selector: a LabelSelector wire value.
    Returns:
        The set of names allowed by `In` expressions and matchLabels on `kubernetes.io/metadata.name` (intersected,
        minus NotIn values) when the selector restricts names that way; frozenset() when it selects no namespace at
        all (None/MISSING, DoesNotExist on the name label, or contradicting requirements); None when it does not
        pin names (any namespace could carry its other labels).
    Raises:
        UnknownValueError: a part of the selector is unknown at preview.
    """
    reqs = requirements(selector)
    if reqs is None:
        return frozenset()
    # Judged once per selector within a judgement (`memo.once`: the overlap and pinned-selector rules both ask).
    return memo.once("pins_names", selector, lambda: _pins_names(reqs))


def _pins_names(reqs: list[Requirement]) -> Optional[frozenset[str]]:
    """`pins_names` of a parsed selector."""
    if not _satisfiable(reqs + [Requirement(NAME_LABEL, "Exists", frozenset())]):
        return frozenset()
    in_sets = [r.values for r in reqs if r.key == NAME_LABEL and r.operator == "In"]
    if not in_sets:
        return None
    excluded = frozenset().union(*(r.values for r in reqs if r.key == NAME_LABEL and r.operator == "NotIn"))
    return frozenset.intersection(*in_sets) - excluded
