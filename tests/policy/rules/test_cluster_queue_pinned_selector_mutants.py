"""cluster-queue-pinned-selector: what the policy-cluster-queue-pinned-selector mutation run found no test pinning
down: the kind judged (ClusterQueue only) and the fail-closed finding for a selector unknown at preview, whole,
through the rule book.
"""
from __future__ import annotations

from kueue_cohorts.policy.rules.book import run
from kueue_cohorts.policy.rules.vocabulary.values import MISSING, ObjectRef
from tests.policy.fixtures import UNKNOWN, stack
from tests.policy.rules.test_cluster_queue_selector_overlap import PINNED, QUEUE, manifests


def test_a_stray_selector_on_a_local_queue_is_not_judged():
    """A LocalQueue manifest carrying `spec.namespaceSelector` with a tenant label only (not in its schema: the
    apiserver prunes it) is no ClusterQueue: no finding (kills `is_kueue(None)`)."""
    m = manifests()
    m["training-lq"]["spec"]["namespaceSelector"] = {"matchLabels": {QUEUE: "c12-training-cq"}}
    assert [v for rule, v in run(stack(m), {}) if rule.name == PINNED] == []


def test_a_selector_unknown_at_preview_fails_closed_on_its_queue():
    """The training queue's selector label unknown at preview: the fail-closed finding names the queue and the field
    (kills `guarded(None, ...)`)."""
    m = manifests()
    m["training-cq"]["spec"]["namespaceSelector"]["matchLabels"][QUEUE] = UNKNOWN
    found = [(v.policy, v.subject, v.field, v.value, v.message) for rule, v in run(stack(m), {}) if rule.name == PINNED]
    field = 'spec.namespaceSelector.matchLabels["kueue.x-k8s.io/queue"]'
    assert found == [(
        "unknown-at-preview", ObjectRef("ClusterQueue", None, "c12-training-cq"), field, MISSING,
        f"The ClusterQueue 'c12-training-cq' has {field} unknown at preview, so this policy cannot check it and fails "
        f"closed; give {field} a value known at preview (a literal or stack config, not an output of another "
        "resource).")]
