"""A tenant's names (ClusterQueue, LocalQueue, namespaces) are resolved once, on TenantSettings, and every layer that
names them (plans, render, the pack config, the settings rules, the guarantees of the PR summary) agrees with it,
whether the stack file gives the names or leaves them to their defaults (`<name>-cq`, `<name>-lq`, `[<name>]`)."""
from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.pack_config import pack_config
from kueue_cohorts.components.model.plans import stack_plans
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.components.settings import raw_from_stack_file
from tests.helpers import STACKS

BASE = raw_from_stack_file(STACKS / "Pulumi.staging.yaml")

NAME = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)


@st.composite
def tenant_overrides(draw):
    """Per tenant of staging's sharedPool: an optional clusterQueue, localQueue and namespaces list."""
    out = []
    for index in range(len(BASE["sharedPool"]["tenants"])):
        prefix = f"t{index}"
        out.append({
            "clusterQueue": draw(st.none() | NAME.map(lambda n, p=prefix: f"{p}-cq-{n}")),
            "localQueue": draw(st.none() | NAME.map(lambda n, p=prefix: f"{p}-lq-{n}")),
            "namespaces": draw(st.none() | st.lists(NAME.map(lambda n, p=prefix: f"{p}-ns-{n}"), min_size=1,
                                                    max_size=3, unique=True)),
        })
    return out


@settings(max_examples=25, deadline=None)
@given(tenant_overrides())
def test_every_layer_names_a_tenant_as_its_settings_do(overrides):
    raw = copy.deepcopy(BASE)
    for tenant, extra in zip(raw["sharedPool"]["tenants"], overrides, strict=True):
        tenant.update({k: v for k, v in extra.items() if v is not None})
    settings_ = load_settings(raw)
    assert settings_.shared_pool is not None
    tenants = settings_.shared_pool.tenants
    for tenant, extra in zip(tenants, overrides, strict=True):
        assert tenant.cluster_queue_name == (extra["clusterQueue"] or f"{tenant.name}-cq")
        assert tenant.local_queue_name == (extra["localQueue"] or f"{tenant.name}-lq")
        assert tenant.namespace_names == (extra["namespaces"] or [tenant.name])

    plan = next(p for p in stack_plans(settings_) if p.layout == "shared-pool")
    assert {cq.name for cq in plan.cluster_queues} == {t.cluster_queue_name for t in tenants}
    assert {(lq.name, lq.namespace) for lq in plan.local_queues} == {
        (t.local_queue_name, ns) for t in tenants for ns in t.namespace_names}

    rendered = render_stack(settings_)
    kinds = {(r.manifest["kind"], r.manifest["metadata"]["name"], r.manifest["metadata"].get("namespace"))
             for r in rendered}
    for t in tenants:
        assert ("ClusterQueue", t.cluster_queue_name, None) in kinds
        for ns in t.namespace_names:
            assert ("LocalQueue", t.local_queue_name, ns) in kinds

    roles = pack_config(settings_)["workload-priority-class"]["clusterQueueRoles"]
    assert {name for name, role in roles.items() if role == "tenant"} == {t.cluster_queue_name for t in tenants}
