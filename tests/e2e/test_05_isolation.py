"""(d) Isolation: a LocalQueue in a namespace that the inference ClusterQueue's namespaceSelector does not match,
pointing at that ClusterQueue, gets none of its workloads admitted (while a matching namespace's are)."""

from e2e_support import assert_outside_namespace_gets_nothing

OUTSIDER = "e2e-outsider"


def test_localqueue_outside_the_namespace_selector_gets_nothing_admitted(cluster, clean_dev_jobs):
    selector = cluster.cluster_queue("c12-inference-cq")["spec"]["namespaceSelector"]
    assert selector, "the inference ClusterQueue must select namespaces"
    assert_outside_namespace_gets_nothing(cluster, OUTSIDER, {})
