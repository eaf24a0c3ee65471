"""Patch resources are judged as the objects they produce.

pulumi-kubernetes registers a patch with the type token of its target kind plus "Patch": typed patches
(`kubernetes:apps/v1:DeploymentPatch`, `kubernetes:core/v1:NamespacePatch`) and
`apiextensions.CustomResourcePatch`, whose token is built from the apiVersion and kind it is given
(`f"kubernetes:{api_version}:{kind}Patch"`, pulumi-kubernetes 4.25
`sdk/python/pulumi_kubernetes/apiextensions/CustomResourcePatch.py`), e.g.
`kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueuePatch`. Its properties are the target's wire fields (`apiVersion`,
`kind` of the TARGET, `metadata` naming it, `spec` ...). The provider applies a patch with Server-Side Apply onto the
live object (`pulumi.com/patchForce: "true"` takes the fields over from other managers), so the object the cluster
ends with is the stack's own object of that kind/namespace/name (if the stack makes one) with the patch merged over
it, or the live object (which the pack cannot see) with the patch over it: judged here as the patch alone.

Merge: JSON merge patch (RFC 7386) semantics: maps merged recursively, a null deletes the key, lists and scalars are
replaced. (Server-Side Apply merges lists with `x-kubernetes-list-type: map` by key; replacing them judges exactly
the entries the patch writes, which is what the rules care about.)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from pulumi_policy.proxy import unknown_checking_proxy

from . import memo
from .objects import KubeObject, unknown_at
from .plain import plain
from .values import MISSING, UnknownValueError, format_path, get, is_map

__all__ = [
    "PATCH_SUFFIX",
    "Resolution",
    "as_target",
    "effective_objects",
    "is_patch",
    "patch_problem",
    "resolve_patches",
]

PATCH_SUFFIX = "Patch"
UNKNOWN_REASON = "is unknown at preview"
"""`patch_problem`'s reason for a patch left out because a value it is resolved by is unknown at preview."""


def is_patch(obj: KubeObject) -> bool:
    """True when `obj`'s type token names a patch (`<Kind>Patch`) and its own `kind` field does not say it is a custom
    resource whose kind really ends in "Patch" (then `kind` equals the token's kind and it is an ordinary object).

    Raises UnknownValueError if the `kind` property is unknown at preview.
    """
    if not obj.kind.endswith(PATCH_SUFFIX) or obj.kind == PATCH_SUFFIX:
        return False
    return bool(get(obj.props, "kind") != obj.kind)


def patch_problem(obj: KubeObject) -> Optional[tuple[str, Any, str]]:
    """Why the object a patch produces cannot be determined, as (field, value, reason); None when it can (or `obj` is
    not a patch).

    A patch is unjudgeable when its `kind` or `apiVersion` property is unknown at preview or names another kind or
    group than its type token, or when `metadata.name` (or `metadata.namespace`) is missing or unknown, so that
    neither the target nor the result is known.
    """
    try:
        if not is_patch(obj):
            return None
    except UnknownValueError as err:
        return format_path(err.props), MISSING, UNKNOWN_REASON
    target = obj.kind[: -len(PATCH_SUFFIX)]
    for name, want in (("kind", target), ("apiVersion", obj.api_version)):
        try:
            value = get(obj.props, name)
        except UnknownValueError:
            return name, MISSING, UNKNOWN_REASON
        if value is not MISSING and value != want:
            return name, value, f"does not match the patch's type token (which patches a {target} of {obj.api_version})"
    for path in (("metadata", "name"), ("metadata", "namespace")):
        try:
            value = get(obj.props, *path)
        except UnknownValueError:
            return format_path(path), MISSING, UNKNOWN_REASON
        if path[1] == "name" and (value is MISSING or value == ""):
            return format_path(path), value, "is missing, so the object it patches is unknown"
    return None


def _merge(base: Any, patch: Any) -> Any:
    """RFC 7386 MergePatch(base, patch) of plain values, iteratively; only the maps along merged paths are copied,
    the inputs are never changed."""
    if not is_map(patch):
        return patch
    result = dict(base) if is_map(base) else {}
    stack = [(result, patch)]
    while stack:
        target, source = stack.pop()
        for key in source:
            value = source[key]
            if value is None:
                target.pop(key, None)
            elif is_map(value):
                merged = dict(target[key]) if is_map(target.get(key)) else {}
                target[key] = merged
                stack.append((merged, value))
            else:
                target[key] = value
    return result


def _strip_nulls(value: Any) -> Any:
    """A patch applied to nothing: its null entries delete nothing and are dropped."""
    return _merge({}, value)


def _wrap(props: Any, proxied: bool) -> Any:
    return unknown_checking_proxy(props) if proxied else props


def _is_proxied(obj: KubeObject) -> bool:
    return not isinstance(obj.props, dict)


def as_target(obj: KubeObject, base: Optional[KubeObject] = None) -> KubeObject:
    """The object a judgeable patch produces.

    Args:
        obj: a patch (`is_patch(obj)` and `patch_problem(obj) is None`).
        base: the stack's own object the patch applies to, if any (same group, kind, namespace and name).
    Returns:
        A KubeObject of the target kind with the patch's urn, resource name, group and version, whose props are
        `base` merged with the patch (or the patch alone), `kind` set to the target kind. Values unknown at preview
        stay unknown (reading them raises UnknownValueError with their path).
    """
    target = obj.kind[: -len(PATCH_SUFFIX)]
    patch_props = plain(obj.props)
    merged = _merge(plain(base.props), patch_props) if base is not None else _strip_nulls(patch_props)
    merged = dict(merged)
    merged["kind"] = target
    merged["apiVersion"] = obj.api_version
    proxied = _is_proxied(obj) or (base is not None and _is_proxied(base))
    return KubeObject(urn=obj.urn, resource_name=obj.resource_name, group=obj.group, version=obj.version,
                      kind=target, props=_wrap(merged, proxied))


@dataclass(frozen=True)
class Resolution:
    """The stack as the cluster would end up with it.

    Attributes:
        objects: every object of the stack, each judgeable patch replaced by the object it produces (merged into the
            stack's own object of the same group/kind/namespace/name, which it replaces in place; several patches of
            one object apply in stack order and the result carries the last patch's urn).
        unjudgeable: (patch, field, value, reason) for every patch whose result cannot be determined (see
            `patch_problem`); these are left out of `objects`.
    """

    objects: list[KubeObject]
    unjudgeable: list[tuple[KubeObject, str, Any, str]] = field(default_factory=list)


def _key(obj: KubeObject) -> Optional[tuple[Any, ...]]:
    try:
        return obj.group, obj.kind, obj.namespace, obj.name
    except UnknownValueError:
        return None


def resolve_patches(objects: Iterable[KubeObject]) -> Resolution:
    """Turn every patch of the stack into the object it produces (see `Resolution`). Resolved once per stack within
    a judgement (`memo.once_over`: JUDGEABLE_PATCHES and every stack rule's effective objects); the Resolution is
    shared there, so callers must not modify it."""
    objects = list(objects)
    return memo.once_over("resolve_patches", objects, lambda: _resolve(objects))


def _resolve(objects: list[KubeObject]) -> Resolution:
    """`resolve_patches`, computed."""
    out: list[Optional[KubeObject]] = []
    position: dict[tuple[Any, ...], int] = {}
    unjudgeable: list[tuple[KubeObject, str, Any, str]] = []
    patches: list[KubeObject] = []
    for obj in objects:
        problem = patch_problem(obj)
        if problem is not None:
            unjudgeable.append((obj, *problem))
            if problem[2] == UNKNOWN_REASON:  # left out: every rule that judges the effective objects reports it
                memo.note(unknown_at(obj, problem[0]))
        elif _patch(obj):
            patches.append(obj)
        else:
            key = _key(obj)
            if key is not None and key not in position:
                position[key] = len(out)
            out.append(obj)
    for patch in patches:
        target = patch.kind[: -len(PATCH_SUFFIX)]
        key = (patch.group, target, patch.namespace, patch.name)
        if key in position:
            index = position[key]
            out[index] = as_target(patch, out[index])
        else:
            position[key] = len(out)
            out.append(as_target(patch))
    return Resolution(objects=[o for o in out if o is not None], unjudgeable=unjudgeable)


def _patch(obj: KubeObject) -> bool:
    try:
        return is_patch(obj)
    except UnknownValueError:
        return False


def effective_objects(objects: Iterable[KubeObject]) -> list[KubeObject]:
    """`resolve_patches(objects).objects`: the stack's objects with every judgeable patch made effective (a new
    list)."""
    return list(resolve_patches(objects).objects)


