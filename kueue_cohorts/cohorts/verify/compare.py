"""``verify``'s comparison engine: a rendered object against its live twin, field by field, as Differences
(quantities compared as quantities; lists item by item, by ``name`` where items have one; label maps may hold more
labels; ``STRICT_KEYS`` and each quota entry equal as a whole)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from kueue_cohorts.components.settings import quantity

QUANTITY_KEYS = frozenset({"nominalQuota", "borrowingLimit", "lendingLimit"})
#: Keys whose whole value must be equal (no extra keys on the cluster): a label selector changes meaning with any
#: addition.
STRICT_KEYS = frozenset({"namespaceSelector"})


@dataclass(frozen=True)
class Difference:
    """One way the cluster differs from the stack: the object (``kind``, ``name``, ``namespace`` or ""), the field
    ``path`` (JSON field names with list indexes as in the rendered manifest, e.g.
    ``spec.resourceGroups[0].flavors[0].resources[2].borrowingLimit``; "" for the whole object), ``item`` (the name
    of the list item the path ends in, e.g. the resource), ``expected`` / ``live`` values (None = absent) and the
    ``rule`` broken; ``fix`` (the rule book's fix) when the difference is a broken promise rather than a field
    that differs from the stack."""

    kind: str
    name: str
    namespace: str
    path: str
    expected: Any
    live: Any
    rule: str
    item: str = ""
    fix: str = ""

    cluster: str = ""
    """The MultiKueue worker the difference is on ("" for the stack's own cluster)."""

    def __str__(self) -> str:
        obj = f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"
        if self.cluster:
            obj = f"[worker {self.cluster}] {obj}"
        if self.fix:  # a broken promise: the rule book's words
            where = f" at {self.path}" if self.path else ""
            live = f" (live {_show(self.live)})" if self.live is not None else ""
            return f"{obj}{where}: {self.rule}{live}; fix: {self.fix}"
        if not self.path:  # the whole object: missing, not served or unreadable
            return f"{obj}: {self.rule}"
        where = self.path + (f" ({self.item})" if self.item else "")
        return f"{obj}: {where}: {self.rule}: expected {_show(self.expected)}, live {_show(self.live)}"

    def as_json(self) -> dict[str, Any]:
        """``{"kind", "name", "namespace", "path", "item", "expected", "live", "rule", "fix"}``, and ``"cluster"``
        for a difference on a MultiKueue worker."""
        out = {"kind": self.kind, "name": self.name, "namespace": self.namespace, "path": self.path,
               "item": self.item, "expected": self.expected, "live": self.live, "rule": self.rule, "fix": self.fix}
        if self.cluster:
            out["cluster"] = self.cluster
        return out


def _show(value: Any) -> str:
    if value is None:
        return "absent"
    return json.dumps(value, sort_keys=True, default=str)



def _equal(key: str, want: Any, have: Any) -> bool:
    if key in QUANTITY_KEYS and want is not None and have is not None:
        try:
            return quantity.parse(want) == quantity.parse(have)
        except ValueError:
            return str(want) == str(have)
    return bool(want == have)


def _named(items: Sequence[Any]) -> bool:
    return bool(items) and all(isinstance(i, Mapping) and "name" in i for i in items)


def _child(path: str, key: str) -> str:
    """``path.key``, or ``path[key]`` for a map key that is not a field name (a label such as
    ``kueue.x-k8s.io/queue``), as k8s.io/apimachinery field.Path prints them."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}" if path else key
    return f"{path}[{key}]"


def compare_fields(want: Any, have: Any, path: str = "", key: str = "", strict: bool = False,
                   item: str = "") -> list[tuple[str, Any, Any, str, str]]:
    """Compare a rendered value with its live twin.

    Args:
        want: the rendered (expected) value. have: the live value (None = absent).
        path: the field path so far. key: the last field name (for quantity comparison).
        strict: the live mapping must not hold keys the rendered one lacks (namespaceSelector, quota entries).
        item: the name of the innermost named list item on the path.
    Returns:
        [(path, expected, live, what, item)] where what is "differs", "absent on the cluster" or "set on the cluster,
        not in the stack". Lists compare item by item (matched by ``name`` when every item has one) and must have
        the same length.
    """
    out: list[tuple[str, Any, Any, str, str]] = []
    if isinstance(want, Mapping):
        if not isinstance(have, Mapping):
            return [(path, want, have, "absent on the cluster" if have is None else "differs", item)]
        strict = strict or key in STRICT_KEYS or "nominalQuota" in want
        for k, v in want.items():
            sub = _child(path, k)
            if k not in have:
                out.append((sub, v, None, "absent on the cluster", item))
            else:
                out += compare_fields(v, have[k], sub, k, strict, item)
        if strict:
            for k in have:
                if k not in want:
                    out.append((_child(path, k), None, have[k], "set on the cluster, not in the stack", item))
        return out
    if isinstance(want, list):
        if not isinstance(have, list):
            return [(path, want, have, "absent on the cluster" if have is None else "differs", item)]
        if _named(want) and _named(have):
            live_by_name = {i["name"]: i for i in have}
            for index, w in enumerate(want):
                sub = f"{path}[{index}]"
                if w["name"] not in live_by_name:
                    out.append((sub, w, None, "absent on the cluster", w["name"]))
                else:
                    out += compare_fields(w, live_by_name[w["name"]], sub, key, strict, w["name"])
            wanted = {w["name"] for w in want}
            out += [(f"{path}[{len(want) + n}]", None, h, "set on the cluster, not in the stack", h["name"])
                    for n, h in enumerate(h for h in have if h["name"] not in wanted)]
            return out
        if len(want) != len(have):
            return [(path, want, have, "differs", item)]
        for index, (w, h) in enumerate(zip(want, have, strict=False)):
            out += compare_fields(w, h, f"{path}[{index}]", key, strict, item)
        return out
    if not _equal(key, want, have):
        out.append((path, want, have, "absent on the cluster" if have is None else "differs", item))
    return out


def compared_part(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """What ``objects_match`` compares: every top-level field but apiVersion, kind and metadata, plus
    metadata.labels (annotations and server-set metadata are not the stack's spec)."""
    out = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind", "metadata")}
    labels = (manifest.get("metadata") or {}).get("labels")
    if labels:
        out["metadata"] = {"labels": dict(labels)}
    return out
