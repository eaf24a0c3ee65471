"""Resource quantities wherever an object carries them, and the effective requests of containers and pods.

The value rules (syntax, sign, range, whole numbers for extended resources) live in `resource_values.py` (no SDK,
so the settings layer uses them too) and are re-exported here; this module finds every quantity of an object
(`quantity_fields`, which the rule of policy/rules/quantities.py judges).

Upstream for the requests: k8s.io/kubernetes `pkg/apis/core/v1/defaults.go` SetDefaults_Pod (a container limit
without a request becomes the request) and k8s.io/component-helpers `resource/helpers.go` PodRequests (containers
summed, init containers as a maximum, restartable (sidecar) init containers added, plus `spec.overhead`).
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any, Iterator, Mapping

from .objects import KubeObject
from .quantity import MAX_QUANTITY, parse_quantity_strict
from .resource_values import is_extended_resource, quantity_problem
from .values import MISSING, UnknownValueError, as_list, as_map, format_path, get, is_list, is_map

__all__ = [
    "MAX_QUANTITY",
    "effective_requests",
    "is_extended_resource",
    "parse_quantity_strict",
    "pod_requests",
    "quantity_fields",
    "quantity_problem",
]


def _extend(path: str, *parts: Any) -> str:
    """`path` (a rendered field path, may be "") continued by `parts` in `format_path` style."""
    tail = format_path(list(parts))
    if not path:
        return tail
    return path + tail if tail.startswith("[") else f"{path}.{tail}"


def _parsed(raw: Any, where: str) -> Decimal:
    try:
        return parse_quantity_strict(raw)
    except ValueError as err:
        raise ValueError(f"{where} {err}") from None


def effective_requests(container: Mapping[str, Any], path: str = "") -> dict[str, Decimal]:
    """A container's requests after Kubernetes defaulting: a resource with a limit and no request requests its limit.

    Args:
        container: a container spec (or any map with `resources.requests`/`resources.limits`).
        path: the container's field path, used in error messages ("spec.containers[0]").
    Returns:
        resource name -> quantity in base units (Decimal).
    Raises:
        ValueError: a value is not a quantity (the message names the field, e.g. "spec.containers[0].resources
            .limits["nvidia.com/gpu"] is not a finite number").
        UnknownValueError: a request or limit is unknown at preview.
    """
    return {name: value for name, (value, _, _) in effective_request_fields(container, path).items()}


def effective_request_fields(container: Mapping[str, Any], path: str = "") -> dict[str, tuple[Decimal, str, Any]]:
    """`effective_requests` with, per resource, the field that gives it (the request, or the limit standing in for
    a missing request) and its raw value: resource -> (quantity, field path, raw). Raises as `effective_requests`."""
    resources = as_map(get(container, "resources"))
    out: dict[str, tuple[Decimal, str, Any]] = {}
    for kind in ("requests", "limits"):
        for name, raw in as_map(get(resources, kind)).items():
            if str(name) not in out:
                where = _extend(path, "resources", kind, str(name))
                out[str(name)] = (_parsed(raw, where), where, raw)
    return out


def _add(total: dict[str, Decimal], more: Mapping[str, Decimal]) -> dict[str, Decimal]:
    out = dict(total)
    for name, value in more.items():
        out[name] = out.get(name, Decimal(0)) + value
    return out


def _max(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> dict[str, Decimal]:
    out = dict(a)
    for name, value in b.items():
        out[name] = max(out.get(name, value), value)
    return out


def pod_requests(pod_spec: Mapping[str, Any], path: str = "spec") -> dict[str, Decimal]:
    """The effective requests of one pod, as the scheduler and Kueue count them (component-helpers PodRequests).

    Args:
        pod_spec: a PodSpec (`containers`, `initContainers`, `overhead`).
        path: its field path for error messages.
    Returns:
        resource -> quantity: max(sum of containers + restartable init containers, the largest init container
        step (each plus the restartable init containers started before it)) plus `overhead`.
    Raises:
        ValueError / UnknownValueError as `effective_requests`.
    """
    total: dict[str, Decimal] = {}
    for i, container in enumerate(as_list(get(pod_spec, "containers"))):
        total = _add(total, effective_requests(container, _extend(path, "containers", i)))
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for i, container in enumerate(as_list(get(pod_spec, "initContainers"))):
        own = effective_requests(container, _extend(path, "initContainers", i))
        if get(container, "restartPolicy") == "Always":
            total = _add(total, own)
            sidecars = _add(sidecars, own)
            step = sidecars
        else:
            step = _add(own, sidecars)
        init_peak = _max(init_peak, step)
    total = _max(total, init_peak)
    overhead = get(pod_spec, "overhead")
    if is_map(overhead):
        total = _add(total, {str(k): _parsed(v, _extend(path, "overhead", str(k))) for k, v in overhead.items()})
    return total


# Keys under which a quantity map or a quantity-bearing structure may sit; an unknown value under one of these keys
# could hide a quantity, so it fails closed instead of being skipped.
_STRUCTURAL = {"spec", "template", "containers", "initContainers", "resources", "resourcesPerNode", "requests",
               "limits", "overhead", "resourceGroups", "flavors", "status", "capacity", "allocatable", "hard",
               "predictor", "transformer", "explainer", "model", "trainer", "replicatedJobs", "jobTemplate",
               "podTemplateOverrides", "worker", "workerSpec", "headGroupSpec", "workerGroupSpecs"}
_QUOTA_FIELDS = ("nominalQuota", "borrowingLimit", "lendingLimit")
_NODE_MAPS = ("capacity", "allocatable")
_MAP_KEYS = frozenset({"requests", "limits", "overhead", "hard", *_NODE_MAPS})
"""The keys under which a quantity map can sit (see `quantity_fields`)."""
_SCALARS = frozenset({str, int, float, bool, type(None)})
"""Exact types of values that are neither maps nor lists."""


def _children(value: Any, key: Any) -> list[tuple[Any, Any]]:
    """(key, child) pairs of a map or list; an unknown child is skipped unless it may hold quantities."""
    out = []
    if is_map(value):
        for child_key in list(value):
            try:
                out.append((child_key, value[child_key]))
            except UnknownValueError:
                if child_key in _STRUCTURAL:
                    raise
    elif is_list(value):
        for i in range(len(value)):
            try:
                out.append((i, value[i]))
            except UnknownValueError:
                if key in _STRUCTURAL:
                    raise
    return out


def quantity_fields(obj: KubeObject) -> Iterator[tuple[str, str, Any]]:
    """Yield (field path, resource name, raw value) for every resource quantity `obj` carries, in document order.

    Found anywhere in the object (iteratively, so deep nesting never hits Python's recursion limit; plain JSON of
    ordinary depth, the program's objects, by a faster recursive walk that gives up on anything else):
    - `requests`/`limits` maps of any `resources` or `resourcesPerNode` map (containers of every pod template: Pods,
      Jobs, Deployments, JobSets, TrainingRuntimes, TrainJobs, KServe predictor `model`/`containers`, ...);
    - `overhead` of a pod spec; `spec.hard` of a ResourceQuota; `status.capacity`/`status.allocatable` of a Node;
    - `nominalQuota`/`borrowingLimit`/`lendingLimit` of every ClusterQueue and Cohort quota entry.
    Raises:
        UnknownValueError: a quantity, a resource name or a structure that may hold them is unknown at preview.
    """
    quota = obj.kind == "ResourceQuota" and not obj.group
    node = obj.kind == "Node" and not obj.group
    plain: list[tuple[str, str, Any]] = []
    if type(obj.props) is dict and _plain_quantity_fields(obj.props, (), plain, 0, quota, node):
        yield from plain  # plain JSON of ordinary depth (the program's objects), read by the faster recursive walk
    else:
        yield from _walked_quantity_fields(obj, quota, node)
    if obj.is_kueue("ClusterQueue") or obj.is_kueue("Cohort"):
        yield from _quota_fields(obj)


_PLAIN_DEPTH = 64
"""How deep the recursive walk of plain JSON goes before handing the object to the iterative walk."""


def _plain_quantity_fields(value: Any, path: tuple[Any, ...], out: list[tuple[str, str, Any]], depth: int,
                           quota: bool, node: bool) -> bool:
    """Append what the walk of `quantity_fields` yields for the map or list `value` (at field path `path`) to `out`,
    in the same order, when `value` is plain JSON (dicts, lists and scalars only) at most `_PLAIN_DEPTH` deep; False
    (and `out` unusable) otherwise. `quota`/`node`: the object is a core ResourceQuota / Node."""
    if depth > _PLAIN_DEPTH:
        return False
    parent = path[-1] if path else None
    is_dict = type(value) is dict
    for key, child in (value.items() if is_dict else enumerate(value)):
        kind = type(child)
        if kind in _SCALARS:
            continue
        if kind is not dict and kind is not list:
            return False
        here = path + (key,)
        if kind is dict and key in _MAP_KEYS and (
                (key in ("requests", "limits") and parent in ("resources", "resourcesPerNode"))
                or (key == "overhead" and is_dict and "containers" in value)
                or (key == "hard" and quota and path == ("spec",))
                or (key in _NODE_MAPS and node and path == ("status",))):
            for name in list(child):
                out.append((format_path(here + (str(name),)), str(name), child[name]))
        elif not _plain_quantity_fields(child, here, out, depth + 1, quota, node):
            return False
    return True


def _walked_quantity_fields(obj: KubeObject, quota: bool, node: bool) -> Iterator[tuple[str, str, Any]]:
    """The walk of `quantity_fields`, iteratively (any depth, the pack's proxies, unknown values)."""
    # Stack items: (path, value, emit) where emit=True means `value` is a quantity map to yield.
    stack: list[tuple[tuple[Any, ...], Any, bool]] = [((), obj.props, False)]
    while stack:
        path, value, emit = stack.pop()
        if emit:
            for name in list(value):
                yield format_path(path + (str(name),)), str(name), value[name]
            continue
        items: list[tuple[tuple[Any, ...], Any, bool]] = []
        parent = path[-1] if path else None
        kind = type(value)
        # Plain JSON (the program's objects) holds no unknown value: its items are read directly.
        pairs = value.items() if kind is dict else enumerate(value) if kind is list else _children(value, parent)
        for key, child in pairs:
            if type(child) in _SCALARS:
                continue  # neither a quantity map nor a structure holding one
            quantity_map = key in _MAP_KEYS and (
                (key in ("requests", "limits") and parent in ("resources", "resourcesPerNode"))
                or (key == "overhead" and is_map(value) and "containers" in value)
                or (key == "hard" and quota and path == ("spec",))
                or (key in _NODE_MAPS and node and path == ("status",)))
            if quantity_map and is_map(child):
                items.append((path + (key,), child, True))
            elif is_map(child) or is_list(child):
                items.append((path + (key,), child, False))
        if items:
            items.reverse()
            stack.extend(items)


def _quota_fields(obj: KubeObject) -> Iterator[tuple[str, str, Any]]:
    for g, group in enumerate(as_list(get(obj.spec, "resourceGroups"))):
        for f, flavor in enumerate(as_list(get(group, "flavors"))):
            for r, entry in enumerate(as_list(get(flavor, "resources"))):
                name = get(entry, "name")
                for field in _QUOTA_FIELDS:
                    raw = get(entry, field)
                    if raw is not MISSING:
                        yield (format_path(["spec", "resourceGroups", g, "flavors", f, "resources", r, field]),
                               str(name), raw)


