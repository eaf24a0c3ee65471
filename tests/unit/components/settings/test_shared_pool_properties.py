"""Property tests: for any valid symmetric config, floor + borrowingLimit <= pool and the floors fit the capacity."""
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.plans import plan_shared_pool
from kueue_cohorts.components.settings.errors import SettingsError
from kueue_cohorts.components.settings.quantity import parse

# GPU-only floors: cpu and memory left out of Kueue's accounting (else every such stack is refused).
GPU_ONLY = {"resources": {"excludeResourcePrefixes": ["cpu", "memory"]}}
floors = st.lists(st.integers(min_value=0, max_value=16), min_size=1, max_size=6)


@st.composite
def configs(draw):
    tenant_floors = draw(floors)
    capacity = draw(st.integers(min_value=0, max_value=100))
    tenants = []
    for i, floor in enumerate(tenant_floors):
        tenant = {"name": f"t{i}", "floor": {"nvidia.com/gpu": str(floor)}}
        if draw(st.booleans()):
            tenant["borrowingLimit"] = {"nvidia.com/gpu": str(draw(st.integers(0, 120)))}
        if draw(st.booleans()):
            tenant["lendingLimit"] = {"nvidia.com/gpu": str(draw(st.integers(0, 20)))}
        tenants.append(tenant)
    return {
        "cluster": {"mode": "render", "renderDir": "x"},
        "nodePools": [{"name": "gpu", "capacity": {"nvidia.com/gpu": str(capacity)}}],
        "sharedPool": {"cohort": "pool", "tenants": tenants},
        "kueue": GPU_ONLY,
    }


accepted: list[bool] = []


def test_the_property_saw_accepted_configs():
    """Guard against a vacuous property: the generator must produce configs the checks accept."""
    accepted.clear()
    test_valid_symmetric_configs_respect_pool_and_capacity()
    assert any(accepted) and not all(accepted)


@settings(max_examples=300, deadline=None)
@given(configs())
def test_valid_symmetric_configs_respect_pool_and_capacity(raw):
    try:
        settings_ = load_settings(raw)
    except SettingsError:
        accepted.append(False)
        return  # refused configs are covered by the bad-config table
    accepted.append(True)
    plan = plan_shared_pool(settings_.shared_pool, "f")
    pool = sum(parse(t.floor["nvidia.com/gpu"]) for t in settings_.shared_pool.tenants)
    assert pool <= settings_.capacity()["nvidia.com/gpu"] or pool == 0
    for cq in plan.cluster_queues:
        rq = cq.quota("nvidia.com/gpu")
        assert parse(rq.nominal_quota) + parse(rq.borrowing_limit) <= pool
        if rq.lending_limit is not None:
            assert parse(rq.lending_limit) <= parse(rq.nominal_quota)


@settings(max_examples=100, deadline=None)
@given(floors)
def test_default_borrowing_limit_is_pool_minus_floor(tenant_floors):
    raw = {
        "cluster": {"mode": "render", "renderDir": "x"},
        "nodePools": [{"name": "gpu", "capacity": {"nvidia.com/gpu": str(sum(tenant_floors))}}],
        "sharedPool": {"cohort": "pool", "tenants": [
            {"name": f"t{i}", "floor": {"nvidia.com/gpu": str(f)}} for i, f in enumerate(tenant_floors)]},
        "kueue": GPU_ONLY,
    }
    plan = plan_shared_pool(load_settings(raw).shared_pool, "f")
    for floor, cq in zip(tenant_floors, plan.cluster_queues, strict=False):
        assert parse(cq.quota("nvidia.com/gpu").borrowing_limit) == Decimal(sum(tenant_floors) - floor)
