"""Issue 13 (6): the tenant label can be copied, not spoofed. A namespace owner who adds the inference tenant label
(`kueue.x-k8s.io/queue: c12-inference-cq`) to their own, undeclared namespace and points a LocalQueue at the
inference ClusterQueue gets nothing admitted there: the selector also pins kubernetes.io/metadata.name to the
declared namespaces, a label no owner can change."""

from e2e_support import assert_outside_namespace_gets_nothing

SPOOF = "e2e-spoofer"
TENANT_LABEL = "kueue.x-k8s.io/queue"


def test_a_copied_tenant_label_selects_nothing(cluster, clean_dev_jobs):
    selector = cluster.cluster_queue("c12-inference-cq")["spec"]["namespaceSelector"]
    assert selector["matchExpressions"] == [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["c12-inference"]}]
    tenant = selector["matchLabels"][TENANT_LABEL]
    # the label an owner can put on their own namespace
    assert_outside_namespace_gets_nothing(cluster, SPOOF, {TENANT_LABEL: tenant})
