"""The guardrails' ValidatingAdmissionPolicies evaluated the way the kube-apiserver evaluates them, without a cluster:
cel-python (`celpy`, requirements-dev.txt) for the CEL, plus shims of the Kubernetes CEL library functions the
generated expressions call, and the policy's own steps (matchConstraints, matchConditions, variables, validations).

Upstream, at the pinned Kubernetes v1.36.3 (k8s.io/apiserver v0.36.3, k8s.io/apimachinery v0.36.3, cel-go v0.26.0):
- `quantity(string)`, `isQuantity`, `<Quantity>.compareTo`, `.asApproximateFloat`, `.isGreaterThan`,
  `.isLessThan`: apiserver `pkg/cel/library/quantity.go` over apimachinery `pkg/api/resource/quantity.go`
  (`ParseQuantity`: a sign, digits with an optional fraction, then one suffix: Ki..Ei, n u m k M G T P E, or an
  exponent e/E with a signed integer; anything else is an evaluation error);
- `<list>.sum()` (the numbers' sum, 0 for an empty list) and `<list>.max()` / `.min()` (an error on an empty list):
  apiserver `pkg/cel/library/lists.go`;
- `<string>.replace(old, new)` (every occurrence): cel-go `ext/strings.go`, which Kubernetes installs
  (`ext.Strings`, apiserver `pkg/cel/environment/base.go`);
- the policy: apiserver `pkg/admission/plugin/policy/validating` (a request is judged when one of its
  `matchConstraints.resourceRules` matches its group, version, resource and operation and every `matchCondition`
  is true; then every validation must be true; with `failurePolicy: Fail` an evaluation error in a condition or a
  validation denies). `request` carries admission/v1 AdmissionRequest's fields the policies read: operation, name,
  namespace, userInfo, `resource` (group, version, resource), `subResource` and `kind` (group, version, kind).
  `object` is null on DELETE and `oldObject` on CREATE; variables are evaluated lazily, so an
  error in one counts only where it is used (here: kept as an error value, which CEL's `&&`/`||` absorb the same way).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any, Mapping, Optional

import celpy
from celpy import celtypes

_QUANTITY = re.compile(r"(?P<sign>[+-]?)(?P<num>[0-9]*)(?:\.(?P<denom>[0-9]*))?"
                       r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


class Quantity(celtypes.StringType):
    """A Kubernetes Quantity inside CEL: its exact value (`Decimal`), printed as its text."""

    value: Decimal

    def __new__(cls, text: str, value: Decimal) -> Quantity:
        made = super().__new__(cls, text)
        made.value = value
        return made


def parse_quantity(text: str) -> Decimal:
    """apimachinery `ParseQuantity`: the value of `text`; ValueError for "" or text outside the grammar (a Go
    parser: no surrounding white space, no `_`, one suffix)."""
    match = _QUANTITY.fullmatch(text)
    if not text or match is None:
        raise ValueError(f"quantities must match the regular expression: {text!r}")
    number = Decimal((match["num"] or "0") + "." + (match["denom"] or "0"))
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        number *= 2 ** _BINARY[suffix]
    elif suffix in _DECIMAL:
        number = number.scaleb(_DECIMAL[suffix])
    elif suffix:
        number = number.scaleb(int(suffix[1:]))
    return -number if match["sign"] == "-" else number


def _quantity(text: Any) -> Any:
    if not isinstance(text, str):
        return celpy.CELEvalError("no such overload: quantity", TypeError, (text,))
    try:
        return Quantity(str(text), parse_quantity(str(text)))
    except ValueError as err:
        return celpy.CELEvalError(str(err), ValueError, (text,))


def _is_quantity(text: Any) -> celtypes.BoolType:
    try:
        parse_quantity(str(text))
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _compare_to(left: Quantity, right: Quantity) -> celtypes.IntType:
    return celtypes.IntType((left.value > right.value) - (left.value < right.value))


def _sum(items: celtypes.ListType) -> Any:
    total: Any = celtypes.DoubleType(0) if all(isinstance(i, celtypes.DoubleType) for i in items) else \
        celtypes.IntType(0)
    for item in items:
        total = total + item
    return total


def _extreme(name: str, pick: Any) -> Any:
    def extreme(items: celtypes.ListType) -> Any:
        if not items:
            return celpy.CELEvalError(f"{name} called on empty list", ValueError, ())
        return pick(items)
    return extreme


def _replace(text: celtypes.StringType, old: celtypes.StringType, new: celtypes.StringType) -> celtypes.StringType:
    return celtypes.StringType(str(text).replace(str(old), str(new)))


def _equals(left: Any, right: Any) -> Any:
    """CEL's heterogeneous `==` where one side is null (cel-spec: values of different types are unequal; the
    apiserver compares `oldObject != null`), cel-python's own `==` otherwise."""
    if left is None or right is None:
        return celtypes.BoolType(left is None and right is None)
    return celpy.evaluation.bool_eq(left, right)


def _differs(left: Any, right: Any) -> Any:
    if left is None or right is None:
        return celtypes.BoolType(not (left is None and right is None))
    return celpy.evaluation.bool_ne(left, right)


FUNCTIONS: dict[str, Any] = {
    "_==_": _equals, "_!=_": _differs,
    "quantity": _quantity, "isQuantity": _is_quantity, "compareTo": _compare_to,
    "asApproximateFloat": lambda q: celtypes.DoubleType(float(q.value)),
    "isGreaterThan": lambda a, b: celtypes.BoolType(a.value > b.value),
    "isLessThan": lambda a, b: celtypes.BoolType(a.value < b.value),
    "sum": _sum, "max": _extreme("max", max), "min": _extreme("min", min), "replace": _replace,
}
"""The Kubernetes CEL library functions the guardrails call (see the module docstring for where each comes from)."""

_ENV = celpy.Environment()


@cache
def program(expression: str) -> celpy.Runner:
    """The compiled CEL `expression` with the Kubernetes shims."""
    return _ENV.program(_ENV.compile(expression), functions=FUNCTIONS)


def evaluate(expression: str, activation: Mapping[str, Any]) -> Any:
    """The value of `expression`, or the `celpy.CELEvalError` it evaluates to (an error is a value here, as in
    the apiserver: the caller decides what an error means)."""
    try:
        return program(expression).evaluate(dict(activation))
    except celpy.CELEvalError as err:
        return err


@dataclass(frozen=True)
class AdmissionRequest:
    """What the apiserver hands a policy: group, version and resource (plural, maybe `namespaces/status`) of the
    request, its operation, name, namespace, the object written (None on DELETE), the object before (None on
    CREATE) and the user."""

    resource: tuple[str, str, str]
    operation: str
    name: str
    namespace: str
    obj: Optional[Mapping[str, Any]]
    old: Optional[Mapping[str, Any]]
    username: str
    groups: tuple[str, ...]


@dataclass(frozen=True)
class Verdict:
    """What one ValidatingAdmissionPolicy made of a request: `matched` (its constraints and conditions selected it),
    `denied`, and why (the failed validation's message, or the evaluation error)."""

    matched: bool
    denied: bool
    why: str = ""


def _cel(value: Any) -> Any:
    return None if value is None else celpy.json_to_cel(value)


def _matches(spec: Mapping[str, Any], request: AdmissionRequest) -> bool:
    group, version, resource = request.resource
    return any(group in rule["apiGroups"] and version in rule["apiVersions"] and resource in rule["resources"]
               and request.operation in rule["operations"]
               for rule in spec["matchConstraints"]["resourceRules"])


def judge(policy: Mapping[str, Any], request: AdmissionRequest) -> Verdict:
    """The apiserver's verdict of the ValidatingAdmissionPolicy manifest `policy` (failurePolicy Fail) on
    `request`."""
    spec = policy["spec"]
    if not _matches(spec, request):
        return Verdict(False, False)
    group, version, plural = request.resource
    resource, _, subresource = plural.partition("/")
    shown = request.obj if request.obj is not None else request.old or {}
    activation: dict[str, Any] = {
        "object": _cel(request.obj), "oldObject": _cel(request.old),
        "request": _cel({"operation": request.operation, "name": request.name, "namespace": request.namespace,
                         "resource": {"group": group, "version": version, "resource": resource},
                         "subResource": subresource,
                         "kind": {"group": group, "version": version, "kind": shown.get("kind", "")},
                         "userInfo": {"username": request.username, "groups": list(request.groups)}}),
    }
    for condition in spec.get("matchConditions", []):
        value = evaluate(condition["expression"], activation)
        if isinstance(value, celpy.CELEvalError):
            return Verdict(True, True, f"matchCondition {condition['name']}: {value}")
        if value is not True and value != celtypes.BoolType(True):
            return Verdict(False, False)
    variables: dict[str, Any] = {}
    for variable in spec.get("variables", []):
        variables[variable["name"]] = evaluate(variable["expression"], {**activation,
                                                                          "variables": celtypes.MapType(variables)})
    activation["variables"] = celtypes.MapType({celtypes.StringType(k): v for k, v in variables.items()})
    for validation in spec["validations"]:
        value = evaluate(validation["expression"], activation)
        if isinstance(value, celpy.CELEvalError):
            return Verdict(True, True, f"error: {value}")
        if value != celtypes.BoolType(True):
            message = evaluate(validation["messageExpression"], activation) \
                if "messageExpression" in validation else validation.get("message", "")
            return Verdict(True, True, str(message))
    return Verdict(True, False)
