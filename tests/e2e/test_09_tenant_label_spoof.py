"""Issue 13 (6): the tenant label can be copied, not spoofed. A namespace owner who adds the inference tenant label
(`kueue.x-k8s.io/queue: c12-inference-cq`) to their own, undeclared namespace and points a LocalQueue at the
inference ClusterQueue gets nothing admitted there: the selector also pins kubernetes.io/metadata.name to the
declared namespaces, a label no owner can change."""

from e2e_support import KUEUE, SLICE, admitted_in, condition, wait_for

SPOOF = "e2e-spoofer"
TENANT_LABEL = "kueue.x-k8s.io/queue"


def test_a_copied_tenant_label_selects_nothing(cluster, clean_dev_jobs):
    selector = cluster.cluster_queue("c12-inference-cq")["spec"]["namespaceSelector"]
    assert selector["matchExpressions"] == [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["c12-inference"]}]
    tenant = selector["matchLabels"][TENANT_LABEL]
    cluster.ensure_namespace(SPOOF, {TENANT_LABEL: tenant})  # the label an owner can put on their own namespace
    cluster.custom.create_namespaced_custom_object(*KUEUE, SPOOF, "localqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": "spoof-lq", "namespace": SPOOF}, "spec": {"clusterQueue": "c12-inference-cq"}})
    try:
        spoof = cluster.submit_job(SPOOF, "spoof", "spoof-lq", SLICE, priority_class="c12-inference-prio")
        refused = wait_for(
            lambda: (w := cluster.workload_of(spoof)) and (c := condition(w, "QuotaReserved"))
            and c["status"] == "False" and "namespace" in c.get("message", "").lower() and w,
            90, "Kueue to refuse the spoofed namespace's Workload")
        assert not admitted_in(refused)
        legit = cluster.submit_job("c12-inference", "serve", "c12-inference-lq", SLICE,
                                   priority_class="c12-inference-prio")
        wait_for(lambda: admitted_in(cluster.workload_of(legit)) == "c12-inference-cq", 90,
                 "the declared namespace's Workload to be admitted")
        assert not admitted_in(cluster.workload_of(spoof)), "free inference quota still does not reach the spoofer"
    finally:
        cluster.core.delete_namespace(SPOOF)
