"""(c) An inference workload larger than the inference ClusterQueue's nominalQuota stays pending and evicts nothing;
a later inference workload that fits is still admitted."""

from e2e_support import SLICE, admitted_in, condition, is_true, wait_for

TOO_BIG = {**SLICE, "nvidia.com/gpucores": "40"}  # nominalQuota 20, borrowingLimit 0 for inference


def test_oversized_inference_stays_pending_and_evicts_nothing(cluster, clean_dev_jobs):
    training = cluster.submit_job("c12-training", "finetune", "c12-training-lq", SLICE,
                                  priority_class="c12-training-prio")
    wait_for(lambda: admitted_in(cluster.workload_of(training)) == "c12-training-cq", 90, "training admitted")

    big = cluster.submit_job("c12-inference", "serve-big", "c12-inference-lq", TOO_BIG,
                             priority_class="c12-inference-prio")
    pending = wait_for(
        lambda: (w := cluster.workload_of(big)) and (c := condition(w, "QuotaReserved")) and c["status"] == "False"
        and c.get("message") and w, 90, "Kueue to evaluate the oversized inference Workload")
    assert not is_true(pending, "Admitted")
    assert "nvidia.com/gpucores" in condition(pending, "QuotaReserved")["message"]
    still = cluster.workload_of(training)
    assert admitted_in(still) == "c12-training-cq", "the oversized request evicted nothing"
    assert not is_true(still, "Evicted") and not is_true(still, "Preempted")

    fits = cluster.submit_job("c12-inference", "serve", "c12-inference-lq", SLICE,
                              priority_class="c12-inference-prio")
    wait_for(lambda: admitted_in(cluster.workload_of(fits)) == "c12-inference-cq", 90,
             "the inference Workload that fits to be admitted")
    assert not admitted_in(cluster.workload_of(big))
