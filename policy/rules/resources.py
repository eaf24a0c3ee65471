"""Resource quantities wherever an object carries them: syntax, sign, range, whole numbers for extended resources,
and the effective requests of containers and pods.

Upstream:
- quantity grammar and range: k8s.io/apimachinery `pkg/api/resource/quantity.go` (ParseQuantity: `[+-]digits[.digits]`
  with a binary suffix Ki..Ei, a decimal suffix n u m k M G T P E, or an exponent `e<int>`/`E<int>`; values above
  2^63-1 are silently capped, which is never what a stack means);
- extended resources: k8s.io/kubernetes `pkg/apis/core/helper/helpers.go` IsExtendedResourceName (fully qualified,
  outside `kubernetes.io/`, not `requests.`-prefixed) and `pkg/apis/core/validation` (an integer resource must be a
  whole number: "must be an integer");
- defaulting: `pkg/apis/core/v1/defaults.go` SetDefaults_Pod (a container limit without a request becomes the
  request) and k8s.io/component-helpers `resource/helpers.go` PodRequests (containers summed, init containers as a
  maximum, restartable (sidecar) init containers added, plus `spec.overhead`).

Everything here returns problems instead of raising for bad input (NaN, Infinity, 1e999999, maps, booleans) and
never computes with a number larger than it must: a huge exponent is judged by its size, not expanded.
"""
from __future__ import annotations

import re
from decimal import MAX_EMAX, MIN_EMIN, ROUND_UP, Decimal, localcontext
from typing import Any, Iterator, Mapping, Optional

from .objects import KubeObject, guarded, violation
from .selectors import label_key_problem
from .values import MISSING, UnknownValueError, Violation, as_list, as_map, format_path, get, is_list, is_map

__all__ = [
    "MAX_QUANTITY",
    "check_quantities",
    "effective_requests",
    "is_extended_resource",
    "parse_quantity_strict",
    "pod_requests",
    "quantity_fields",
    "quantity_problem",
]

MAX_QUANTITY = Decimal(2**63 - 1)
"""The largest quantity the apiserver keeps (it caps larger ones at this value: `maxAllowed`)."""

_QUANTITY = re.compile(r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
                       r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<decimal>[numkMGTPE])|[eE](?P<exponent>[+-]?[0-9]+))?")
_DECIMAL_EXPONENTS = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_POWERS = {"Ki": 10, "Mi": 20, "Ti": 40, "Gi": 30, "Pi": 50, "Ei": 60}
# Exponents beyond this can only mean overflow (non-zero mantissa) or a value below 1n; judged without expanding.
_EXPONENT_BOUND = 400
_NANO = Decimal("1e-9")
_EXAMPLES = '"4", "500m" or "8Gi"'


def is_extended_resource(name: Any) -> bool:
    """Kubernetes' IsExtendedResourceName: a fully qualified resource name outside the `kubernetes.io/` domain.

    Args:
        name: a resource name ("nvidia.com/gpu", "cpu", "hugepages-2Mi", "requests.example.com/x").
    Returns:
        True for "nvidia.com/gpu", "nvidia.com/gpualloc", "example.com/foo"; False for "cpu", "memory",
        "ephemeral-storage", "hugepages-2Mi" (no '/'), "kubernetes.io/x" and "x.kubernetes.io/y" (native),
        "requests.example.com/x" (quota convention), and names that are not qualified names after "requests.".
    """
    if not isinstance(name, str) or "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return label_key_problem("requests." + name) is None


def parse_quantity_strict(raw: Any) -> Decimal:
    """Parse a Kubernetes quantity exactly as the apiserver's grammar allows, without overflowing.

    Args:
        raw: the wire value: a string ("1.5", "500m", "8Gi", "1e3"), or a JSON number (int, or a float without
            NaN/Infinity; integral floats are read as ints, since JSON numbers arrive as floats through gRPC).
    Returns:
        The exact value in base units (cores, bytes, devices), at most MAX_QUANTITY in magnitude.
    Raises:
        ValueError: not a quantity ("NaN", "Infinity", "inf", "1 Gi", "1_000", "", booleans, maps), or beyond
            MAX_QUANTITY in magnitude ("1e999999", "9Ei"), with a clause saying which.
    """
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float, Decimal)):
        raise ValueError(f"is a {type(raw).__name__}, not a quantity")
    if isinstance(raw, float):
        if raw != raw or raw in (float("inf"), float("-inf")):
            raise ValueError("is not a finite number")
        text = str(int(raw)) if raw.is_integer() else repr(raw)
    elif isinstance(raw, Decimal):
        if not raw.is_finite():
            raise ValueError("is not a finite number")
        text = format(raw, "f") if abs(raw.adjusted()) < _EXPONENT_BOUND else f"{raw:e}"
    else:
        text = str(raw)
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError("is not a Kubernetes quantity")
    number = match.group("number")
    exponent = 0
    if match.group("exponent") is not None:
        exponent_text = match.group("exponent").lstrip("+-").lstrip("0") or "0"
        if len(exponent_text) > 6:
            exponent = _EXPONENT_BOUND * 10 * (-1 if match.group("exponent").startswith("-") else 1)
        else:
            exponent = int(match.group("exponent"))
    elif match.group("decimal"):
        exponent = _DECIMAL_EXPONENTS[match.group("decimal")]
    mantissa = Decimal(number)
    if mantissa == 0:
        return Decimal(0)
    if mantissa.adjusted() + exponent > _EXPONENT_BOUND:
        raise ValueError("is above the largest quantity Kubernetes keeps (2^63-1)")
    with localcontext() as ctx:
        ctx.prec = len(number) + 2 * _EXPONENT_BOUND
        ctx.Emax, ctx.Emin = MAX_EMAX, MIN_EMIN
        value = mantissa.scaleb(max(exponent, -10 * _EXPONENT_BOUND))
        if match.group("binary"):
            value *= Decimal(2 ** _BINARY_POWERS[match.group("binary")])
        if value.as_tuple().exponent < -9:  # the apiserver rounds up to the next nano: 1e-10 -> 1n
            value = value.quantize(_NANO, rounding=ROUND_UP)
        if match.group("sign") == "-":
            value = -value
    if value.copy_abs() > MAX_QUANTITY:
        raise ValueError("is above the largest quantity Kubernetes keeps (2^63-1)")
    return value


def quantity_problem(resource: Any, raw: Any) -> Optional[tuple[str, str]]:
    """Why `raw` is not an acceptable amount of `resource`, as (rule, fix); None when it is one.

    Args:
        resource: the resource name ("cpu", "nvidia.com/gpu"); extended resources must be whole numbers.
        raw: the wire value (see `parse_quantity_strict`).
    Returns:
        None, or (rule, fix) clauses for `objects.violation`, for: not a quantity (incl. NaN, Infinity, 1e999999),
        negative, or a fraction of an extended resource ("1.5" or "1500m" of nvidia.com/gpu; "2000m" is 2 and
        passes). Never raises; runs in microseconds for any input.
    """
    try:
        value = parse_quantity_strict(raw)
    except ValueError as err:
        return (f"an amount of '{resource}' must be a finite Kubernetes quantity no larger than 2^63-1, and this "
                f"value {err}", f"write a plain quantity such as {_EXAMPLES}")
    if value < 0:
        return (f"an amount of '{resource}' must not be negative",
                "write zero or a positive quantity")
    if is_extended_resource(resource) and value != value.to_integral_value():
        whole = value.to_integral_value(rounding="ROUND_FLOOR")
        return (f"'{resource}' is an extended resource, which Kubernetes accepts only in whole numbers",
                f"write a whole number such as \"{max(whole, Decimal(1))}\" (device plugins cannot hand out a "
                f"fraction of a device)")
    return None


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


def effective_requests(container: Mapping, path: str = "") -> dict[str, Decimal]:
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
    resources = as_map(get(container, "resources"))
    out: dict[str, Decimal] = {}
    for name, raw in as_map(get(resources, "requests")).items():
        out[str(name)] = _parsed(raw, _extend(path, "resources", "requests", str(name)))
    for name, raw in as_map(get(resources, "limits")).items():
        if str(name) not in out:
            out[str(name)] = _parsed(raw, _extend(path, "resources", "limits", str(name)))
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


def pod_requests(pod_spec: Mapping, path: str = "spec") -> dict[str, Decimal]:
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

    Found anywhere in the object (iteratively, so deep nesting never hits Python's recursion limit):
    - `requests`/`limits` maps of any `resources` or `resourcesPerNode` map (containers of every pod template: Pods,
      Jobs, Deployments, JobSets, TrainingRuntimes, TrainJobs, KServe predictor `model`/`containers`, ...);
    - `overhead` of a pod spec; `spec.hard` of a ResourceQuota; `status.capacity`/`status.allocatable` of a Node;
    - `nominalQuota`/`borrowingLimit`/`lendingLimit` of every ClusterQueue and Cohort quota entry.
    Raises:
        UnknownValueError: a quantity, a resource name or a structure that may hold them is unknown at preview.
    """
    # Stack items: (path, value, emit) where emit=True means `value` is a quantity map to yield.
    stack: list[tuple[tuple, Any, bool]] = [((), obj.props, False)]
    while stack:
        path, value, emit = stack.pop()
        if emit:
            for name in list(value):
                yield format_path(path + (str(name),)), str(name), value[name]
            continue
        items: list[tuple[tuple, Any, bool]] = []
        for key, child in _children(value, path[-1] if path else None):
            here = path + (key,)
            quantity_map = (
                (key in ("requests", "limits") and bool(path) and path[-1] in ("resources", "resourcesPerNode"))
                or (key == "overhead" and is_map(value) and "containers" in value)
                or (key == "hard" and path == ("spec",) and obj.kind == "ResourceQuota" and not obj.group)
                or (key in _NODE_MAPS and path == ("status",) and obj.kind == "Node" and not obj.group))
            if quantity_map and is_map(child):
                items.append((here, child, True))
            elif is_map(child) or is_list(child):
                items.append((here, child, False))
        stack.extend(reversed(items))
    if obj.is_kueue("ClusterQueue") or obj.is_kueue("Cohort"):
        yield from _quota_fields(obj)


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


def check_quantities(obj: KubeObject, policy: str) -> list[Violation]:
    """Every resource quantity of `obj` (see `quantity_fields`) passes `quantity_problem`.

    Args:
        obj: any Kubernetes object of the stack.
        policy: the policy name for the Violations.
    Returns:
        One Violation per bad quantity, naming its exact field path and raw value, with the rule and fix of
        `quantity_problem`; the fail-closed violation when a quantity is unknown at preview.
    """
    def check() -> list[Violation]:
        found = []
        for field, resource, raw in quantity_fields(obj):
            problem = quantity_problem(resource, raw)
            if problem is not None:
                found.append(violation(obj, policy, field, raw, *problem))
        return found

    return guarded(obj, check)
