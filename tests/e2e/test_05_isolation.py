"""(d) Isolation: a LocalQueue in a namespace that the inference ClusterQueue's namespaceSelector does not match,
pointing at that ClusterQueue, gets none of its workloads admitted (while a matching namespace's are)."""

from e2e_support import KUEUE, SLICE, admitted_in, condition, wait_for

OUTSIDER = "e2e-outsider"


def test_localqueue_outside_the_namespace_selector_gets_nothing_admitted(cluster, clean_dev_jobs):
    selector = cluster.cluster_queue("c12-inference-cq")["spec"]["namespaceSelector"]
    assert selector, "the inference ClusterQueue must select namespaces"
    cluster.ensure_namespace(OUTSIDER)
    cluster.custom.create_namespaced_custom_object(*KUEUE, OUTSIDER, "localqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": "sneaky-lq", "namespace": OUTSIDER}, "spec": {"clusterQueue": "c12-inference-cq"}})
    try:
        sneaky = cluster.submit_job(OUTSIDER, "sneaky", "sneaky-lq", SLICE, priority_class="c12-inference-prio")
        rejected = wait_for(
            lambda: (w := cluster.workload_of(sneaky)) and (c := condition(w, "QuotaReserved"))
            and c["status"] == "False" and "namespace" in c.get("message", "").lower() and w,
            90, "Kueue to refuse the outsider Workload for its namespace")
        assert not admitted_in(rejected)

        legit = cluster.submit_job("c12-inference", "serve", "c12-inference-lq", SLICE,
                                   priority_class="c12-inference-prio")
        wait_for(lambda: admitted_in(cluster.workload_of(legit)) == "c12-inference-cq", 90,
                 "the matching namespace's Workload to be admitted")
        assert not admitted_in(cluster.workload_of(sneaky)), "free quota still does not reach the outsider"
    finally:
        cluster.core.delete_namespace(OUTSIDER)
