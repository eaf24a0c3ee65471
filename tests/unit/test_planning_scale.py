"""Issue 15 (1): planning and the settings check are linear in the number of tenants. Work is counted, not timed:
the quantity parses of the planner and the rule book's selector comparisons grow like the tenants, not like their
square (the planner once recomputed a per-resource flag over all tenants for every tenant, and the overlap rule
compared every pair of ClusterQueues)."""
from __future__ import annotations

import pytest

from benchmarks.planning import pool_config
from components import plans
from components.settings import parse_settings
from components.validation import validate
from policy.rules import overlap


def _count(monkeypatch: pytest.MonkeyPatch, module: object, name: str, run) -> int:
    calls = 0
    original = getattr(module, name)

    def counting(*args, **kwargs):
        nonlocal calls
        calls += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    run()
    monkeypatch.setattr(module, name, original)
    return calls


@pytest.mark.parametrize("small, large", [(50, 100), (100, 400)])
def test_the_planner_reads_each_tenants_quantities_a_constant_number_of_times(monkeypatch, small, large):
    def reads(n: int) -> int:
        pool = parse_settings(pool_config(n)).shared_pool
        return sum(_count(monkeypatch, plans.quantity, name, lambda: plans.plan_shared_pool(pool, "f"))
                   for name in ("parse", "is_binary"))

    assert reads(large) / reads(small) == pytest.approx(large / small, rel=0.05)


def test_the_overlap_rule_compares_pinned_queues_in_linear_work(monkeypatch):
    def comparisons(n: int) -> int:
        raw = pool_config(n)
        return _count(monkeypatch, overlap, "can_overlap", lambda: validate(raw))

    assert comparisons(200) / comparisons(50) == pytest.approx(4, rel=0.1)
