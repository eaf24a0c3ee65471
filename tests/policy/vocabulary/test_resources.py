"""kueue_cohorts/policy/rules/vocabulary/resources.py (and the NaN-proof
quantity.parse): extended resources in whole numbers, quantity problems, Kubernetes' effective requests of a pod."""
from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.vocabulary.quantity import parse
from kueue_cohorts.policy.rules.vocabulary.resources import (
    MAX_QUANTITY,
    effective_requests,
    is_extended_resource,
    parse_quantity_strict,
    pod_requests,
    quantity_problem,
)

GPU = "nvidia.com/gpualloc"


NOT_WHOLE = ("'{r}' is an extended resource, which Kubernetes accepts only in whole numbers",
             'write a whole number such as "{w}" (device plugins cannot hand out a fraction of a device)')


def not_whole(resource, whole="1"):
    return NOT_WHOLE[0].format(r=resource), NOT_WHOLE[1].format(w=whole)


def not_quantity(resource, why):
    return (f"an amount of '{resource}' must be a finite Kubernetes quantity no larger than 2^63-1, and this value "
            f"{why}", 'write a plain quantity such as "4", "500m" or "8Gi"')


@pytest.mark.parametrize("name", ["nvidia.com/gpu", GPU, "nvidia.com/gpucores", "example.com/foo", "a.b/c_d"])
def test_extended_resources(name):
    assert is_extended_resource(name)


@pytest.mark.parametrize("name", ["cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "pods", "kubernetes.io/x",
                                  "x.kubernetes.io/y", "requests.example.com/x", "Example.com/x", "example.com/",
                                  "a/b/c", "example.com/" + "x" * 64, 3, None])
def test_not_extended_resources(name):
    assert not is_extended_resource(name)


@pytest.mark.parametrize("raw,value", [
    ("4", 4), ("500m", Decimal("0.5")), ("8Gi", 8 * 2**30), ("1.5", Decimal("1.5")), (".5", Decimal("0.5")),
    ("5.", 5), ("+2", 2), ("-2", -2), ("1e3", 1000), ("1E3", 1000), ("1e-3", Decimal("0.001")), ("2k", 2000),
    ("3M", 3_000_000), ("1n", Decimal("1e-9")), ("1u", Decimal("1e-6")), ("7Ei", 7 * 2**60), (2, 2), (2.0, 2),
    (1.5, Decimal("1.5")), (Decimal("3"), 3), ("1e-10", Decimal("1e-9")), ("0e999999999", 0),
    ("9223372036854775807", MAX_QUANTITY),
])
def test_parse_quantity_strict(raw, value):
    assert parse_quantity_strict(raw) == value


@pytest.mark.parametrize("raw", ["NaN", "nan", "Infinity", "-Infinity", "inf", "sNaN", "", " 1", "1 ", "1 Gi", "1_000",
                                 "1Ki1", "ki", "1ki", "1mi", "1e", "1e1.5", "Mi", ".", "+", "0x10", "1/2", "lots",
                                 True, False, None, {}, [], float("nan"), float("inf"), Decimal("NaN"),
                                 Decimal("Infinity"), "1e999999", "1e9999999999999999999", "9Ei",
                                 "9223372036854775808", "-9223372036854775808", "1e19"])
def test_not_quantities_raise_value_error(raw):
    with pytest.raises(ValueError):
        parse_quantity_strict(raw)


# issue 13 items 8 and 11: "1.5" of a GPU is refused, "1.5" cpu accepted, "NaN" is a problem and never an exception.
@pytest.mark.parametrize("resource,raw,problem", [
    ("cpu", "1.5", None),
    ("cpu", "1500m", None),
    ("memory", "1.5Gi", None),
    ("nvidia.com/gpu", "1", None),
    ("nvidia.com/gpu", "2000m", None),
    ("nvidia.com/gpu", "0", None),
    (GPU, 2, None),
    ("nvidia.com/gpu", "1.5", not_whole("nvidia.com/gpu")),
    (GPU, "1.5", not_whole(GPU)),
    (GPU, "1500m", not_whole(GPU)),
    (GPU, 1.5, not_whole(GPU)),
    ("nvidia.com/gpumem", "2.5", not_whole("nvidia.com/gpumem", "2")),
    ("nvidia.com/gpu", "1e-10", not_whole("nvidia.com/gpu")),
    ("nvidia.com/gpu", "NaN", not_quantity("nvidia.com/gpu", "is not a Kubernetes quantity")),
    ("cpu", "Infinity", not_quantity("cpu", "is not a Kubernetes quantity")),
    ("cpu", "inf", not_quantity("cpu", "is not a Kubernetes quantity")),
    ("cpu", float("nan"), not_quantity("cpu", "is not a finite number")),
    ("memory", "1e999999", not_quantity("memory", "is above the largest quantity Kubernetes keeps (2^63-1)")),
    ("cpu", True, not_quantity("cpu", "is a bool, not a quantity")),
    ("cpu", {"value": 1}, not_quantity("cpu", "is a dict, not a quantity")),
    ("cpu", "-1", ("an amount of 'cpu' must not be negative", "write zero or a positive quantity")),
    (GPU, "-1", (f"an amount of '{GPU}' must not be negative", "write zero or a positive quantity")),
])
def test_quantity_problem_table(resource, raw, problem):
    assert quantity_problem(resource, raw) == problem


@pytest.mark.parametrize("raw", ["1" + "0" * 100_000, "0." + "1" * 100_000, "1e" + "9" * 100_000,
                                 "1e-" + "9" * 100_000, "9" * 100_000 + "Ei", "x" * 1_000_000])
@pytest.mark.timeout(10)  # a hang guard, not a timing assertion (benchmarks measure speed)
def test_huge_inputs_are_judged_not_hung_on(raw):
    assert quantity_problem("nvidia.com/gpu", raw) is not None or quantity_problem("cpu", raw) is None
    parse(raw)


@pytest.mark.parametrize("raw", ["NaN", "Infinity", "-Infinity", "inf", "sNaN", "1e999999", "1e9999999",
                                 float("nan"), float("inf"), "9Ei"])
def test_quantities_parse_refuses_non_finite_and_out_of_range(raw):
    assert parse(raw) is None


def test_quantities_parse_rounds_below_nano_up():
    assert parse("1e-9999999999") == Decimal("1e-9")
    assert parse("1e-10") == Decimal("1e-9")
    assert parse("0.5") == Decimal("0.5")


@given(st.integers(min_value=0, max_value=2**63 - 1))
def test_whole_numbers_pass_for_every_resource(n):
    for resource in ("cpu", "memory", GPU):
        assert quantity_problem(resource, str(n)) is None
        assert quantity_problem(resource, f"{n * 1000}m") is None


@given(st.integers(min_value=0, max_value=10**12), st.integers(min_value=1, max_value=999))
def test_fractions_pass_for_cpu_and_fail_for_extended_resources(whole, milli):
    raw = f"{whole}.{milli:03d}"
    assert quantity_problem("cpu", raw) is None
    assert quantity_problem(GPU, raw) == not_whole(GPU, str(max(whole, 1)))
    assert quantity_problem(GPU, f"{whole * 1000 + milli}m") == not_whole(GPU, str(max(whole, 1)))


@settings(max_examples=300)
@given(st.one_of(st.text(max_size=40), st.floats(allow_nan=True, allow_infinity=True), st.integers(),
                 st.booleans(), st.none(), st.decimals(allow_nan=True, allow_infinity=True)))
def test_quantity_problem_never_raises(raw):
    problem = quantity_problem(GPU, raw)
    assert problem is None or (isinstance(problem, tuple) and len(problem) == 2)
    value = parse(raw)
    assert value is None or value.is_finite()


def test_limits_without_requests_become_requests():
    # issue 13 item 9: requests {cpu, memory}, limits {nvidia.com/gpualloc, ephemeral-storage}.
    container = {"resources": {"requests": {"cpu": "1", "memory": "2Gi"},
                               "limits": {GPU: "2", "ephemeral-storage": "10Gi", "cpu": "4"}}}
    assert effective_requests(container) == {"cpu": 1, "memory": 2 * 2**30, GPU: 2, "ephemeral-storage": 10 * 2**30}


def test_effective_requests_of_nothing():
    assert effective_requests({}) == {}
    assert effective_requests({"resources": {"requests": None}}) == {}


def test_effective_requests_name_the_bad_field():
    with pytest.raises(ValueError) as err:
        effective_requests({"resources": {"limits": {GPU: "NaN"}}}, "spec.containers[0]")
    assert str(err.value) == 'spec.containers[0].resources.limits["nvidia.com/gpualloc"] is not a Kubernetes quantity'
    with pytest.raises(ValueError) as err:
        pod_requests({"containers": [{"resources": {"requests": {"cpu": "1"}}}], "overhead": {"example.com/x": "x"}},
                     "spec.template.spec")
    assert str(err.value) == 'spec.template.spec.overhead["example.com/x"] is not a Kubernetes quantity'


def _c(**requests):
    return {"resources": {"requests": {k.replace("_", "/"): v for k, v in requests.items()}}}


def test_pod_requests_sum_containers_and_take_the_init_peak():
    pod = {"containers": [_c(cpu="1", memory="1Gi"), _c(cpu="2")],
           "initContainers": [_c(cpu="4"), _c(memory="3Gi")],
           "overhead": {"cpu": "250m"}}
    assert pod_requests(pod) == {"cpu": Decimal("4.25"), "memory": 3 * 2**30}


def test_pod_requests_add_sidecars():
    sidecar = dict(_c(cpu="1"), restartPolicy="Always")
    pod = {"containers": [_c(cpu="2")], "initContainers": [sidecar, _c(cpu="2")]}
    # regular: 2 + sidecar 1 = 3; init step after the sidecar: 2 + 1 = 3.
    assert pod_requests(pod) == {"cpu": 3}
    pod = {"containers": [_c(cpu="1")], "initContainers": [sidecar, _c(cpu="5")]}
    assert pod_requests(pod) == {"cpu": 6}


@given(st.lists(st.integers(min_value=0, max_value=100), max_size=4),
       st.lists(st.integers(min_value=0, max_value=100), max_size=4))
def test_pod_requests_is_max_of_sum_and_largest_init(regular, init):
    pod = {"containers": [_c(cpu=str(v)) for v in regular], "initContainers": [_c(cpu=str(v)) for v in init]}
    expected = max([sum(regular)] + init) if regular or init else None
    assert pod_requests(pod).get("cpu") == expected
