"""Issue 15 (1): planning and the settings check are linear in the number of tenants. Work is counted, not timed:
the quantity parses of the planner and the rule book's selector comparisons grow like the tenants, not like their
square (the planner once recomputed a per-resource flag over all tenants for every tenant, and the overlap rule
compared every pair of ClusterQueues)."""
from __future__ import annotations

import gc
from collections import Counter

import pytest
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError, unknown_checking_proxy

from kueue_cohorts.benchmarks.planning import pool_config
from kueue_cohorts.components.checks import validation
from kueue_cohorts.components.checks.validation import as_objects, validate
from kueue_cohorts.components.model import plans
from kueue_cohorts.components.model.pack_config import pack_config
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.components.settings import parse_settings
from kueue_cohorts.policy.rules import book, cluster_queue_selector_overlap
from kueue_cohorts.policy.rules.vocabulary import memo, namespaces, patches, queues, quota, selectors
from kueue_cohorts.policy.rules.vocabulary.objects import KubeObject


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
        return _count(monkeypatch, cluster_queue_selector_overlap, "can_overlap", lambda: validate(raw))

    assert comparisons(200) / comparisons(50) == pytest.approx(4, rel=0.1)


def _tally(monkeypatch: pytest.MonkeyPatch, module: object, name: str, key=lambda *args: None) -> Counter:
    """Replace `module.name` by a wrapper that counts its calls per `key(*args)`; returns the live Counter."""
    counts: Counter = Counter()
    original = getattr(module, name)

    def counting(*args, **kwargs):
        counts[key(*args)] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return counts


def test_the_rule_book_derives_each_objects_facts_once_per_run(monkeypatch):
    """Every role-aware rule and workload-priority-class read each object's label sets, five rules parse each
    ClusterQueue's namespaceSelector, most quota rules read its quota entries, and several rules index the queues and
    merge patches: within one `book.run` each of these is computed once per object (per stack), not once per rule
    (issue 15: label_sets was walked about 18 times per ClusterQueue, selectors parsed 12 times)."""
    settings = parse_settings(pool_config(40))
    objects = as_objects(render_stack(settings))
    cluster_queues = [o for o in objects if o.kind == "ClusterQueue"]
    walks = _tally(monkeypatch, queues, "label_sets", key=lambda props, *rest: id(props))
    parses = _tally(monkeypatch, selectors, "_requirements", key=lambda selector: id(selector))
    entries = _tally(monkeypatch, quota, "_quota_entries", key=lambda obj: id(obj.props))
    merges = _tally(monkeypatch, patches, "_resolve")
    namespace_labels = _tally(monkeypatch, namespaces, "_namespace_labels")

    assert book.run(objects, pack_config(settings)) == []

    assert sorted(walks) == sorted(id(o.props) for o in objects) and set(walks.values()) == {1}
    assert [parses[id(cq.props["spec"]["namespaceSelector"])] for cq in cluster_queues] == [1] * len(cluster_queues)
    assert len(entries) == len(cluster_queues) and set(entries.values()) == {1}
    assert merges[None] == 1 and namespace_labels[None] == 1


def test_outside_a_run_nothing_is_remembered(monkeypatch):
    """A rule called on its own (the pack's per-resource calls, a unit test) sees a changed object: facts are only
    remembered inside `memo.judging()`, and dropped when it ends."""
    selector = {"matchLabels": {"team": "a"}}
    assert selectors.matches(selector, {"team": "a"})
    selector["matchLabels"]["team"] = "b"
    assert not selectors.matches(selector, {"team": "a"})
    with memo.judging():
        assert selectors.matches(selector, {"team": "b"})
        selector["matchLabels"]["team"] = "c"
        assert selectors.matches(selector, {"team": "b"})  # remembered within the run (values never change there)
    assert selectors.matches(selector, {"team": "c"})


def test_a_remembered_walk_raises_where_the_walk_raised():
    """`memo.replay` gives every reader the same items and then the same exception: a workload whose second label
    set has a queue-name unknown at preview yields its first label set, then raises UnknownValueError, whether read
    on its own or (twice) within a run, so a rule that handled the first label set behaves the same every time."""
    queue = "kueue.x-k8s.io/queue-name"
    props = unknown_checking_proxy({"metadata": {"name": "j", "labels": {queue: "lq"}},
                                    "spec": {"template": {"metadata": {"labels": {queue: UNKNOWN_STRING_VALUE}}}}})
    job = KubeObject("", "j", "batch", "v1", "Job", props)

    def read() -> list[tuple[str, str]]:
        seen = []
        with pytest.raises(UnknownValueError):
            for path, _, name in queues.queued_label_sets(job):
                seen.append((path, name))
        return seen

    alone = read()
    with memo.judging():
        assert read() == read() == alone == [("metadata.labels", "lq")]


def test_the_settings_check_pauses_the_cyclic_collector_and_restores_it(monkeypatch):
    """The check's objects form no cycles, so validate runs with Python's cyclic collector paused (its full passes
    over ~50 objects per tenant freed nothing and took a third of the check at 10,000 tenants) and leaves it as it
    found it, also when the check raises."""
    seen = []
    judge_stack = validation.run_rule_book

    def recording(*args, **kwargs):
        seen.append(gc.isenabled())
        return judge_stack(*args, **kwargs)

    monkeypatch.setattr(validation, "run_rule_book", recording)
    assert gc.isenabled()
    assert not validate(pool_config(3)).problems
    assert seen == [False] and gc.isenabled()

    gc.disable()
    try:
        validate(pool_config(3))
        assert not gc.isenabled()  # a caller that paused it keeps it paused
    finally:
        gc.enable()

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(validation, "run_rule_book", broken)
    with pytest.raises(RuntimeError):
        validate(pool_config(3))
    assert gc.isenabled()
