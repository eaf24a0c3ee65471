"""(a) The guide's round trip with batch Jobs on the dev stack: training borrows, inference reclaims its nominal
quota (training Preempted=True, reason InCohortReclamation, Evicted and Requeued), and training is admitted again
under the same Job once inference is gone."""

from e2e_support import SLICE, admitted_in, borrowed, condition, is_true, wait_for


def _running_pods(cluster, job) -> list:
    pods = cluster.core.list_namespaced_pod(job.metadata.namespace, label_selector=f"job-name={job.metadata.name}")
    return [p for p in pods.items if p.status.phase == "Running" and p.metadata.deletion_timestamp is None]


def test_inference_reclaims_its_quota_from_borrowing_training_and_training_comes_back(cluster, clean_dev_jobs):
    training = cluster.submit_job("c12-training", "finetune", "c12-training-lq", SLICE,
                                  priority_class="c12-training-prio")
    assert training.spec.suspend is True, "Kueue's mutating webhook suspends a queued Job at creation"

    wl = wait_for(lambda: (w := cluster.workload_of(training)) and admitted_in(w) == "c12-training-cq" and w,
                  90, "the training Workload to be admitted in c12-training-cq")
    assert wl["spec"]["priority"] == 10
    assert wl["spec"]["priorityClassRef"]["name"] == "c12-training-prio"
    wait_for(lambda: borrowed(cluster.cluster_queue("c12-training-cq"), "nvidia.com/gpualloc") == 1, 30,
             "c12-training-cq to report the borrowed GPU (training nominalQuota is 0)")
    pods = wait_for(lambda: _running_pods(cluster, training), 60, "the training Pod to run on a kwok node")
    assert pods[0].spec.node_name == "gpu-0"

    inference = cluster.submit_job("c12-inference", "serve", "c12-inference-lq", SLICE,
                                   priority_class="c12-inference-prio")
    assert inference.spec.suspend is True

    preempted = wait_for(lambda: (w := cluster.workload_of(training)) and is_true(w, "Preempted") and w,
                         90, "the training Workload to be preempted")
    assert condition(preempted, "Preempted")["reason"] == "InCohortReclamation"
    assert is_true(preempted, "Evicted") and condition(preempted, "Evicted")["reason"] == "Preempted"
    requeued = wait_for(lambda: (w := cluster.workload_of(training)) and is_true(w, "Requeued") and w,
                        60, "the training Workload to be requeued")
    assert not is_true(requeued, "Admitted")

    wait_for(lambda: admitted_in(cluster.workload_of(inference)) == "c12-inference-cq", 90,
             "the inference Workload to be admitted in c12-inference-cq")
    assert cluster.read_job(training).spec.suspend is True, "the preempted training Job is suspended again"
    wait_for(lambda: borrowed(cluster.cluster_queue("c12-training-cq"), "nvidia.com/gpualloc") == 0, 30,
             "c12-training-cq to borrow nothing once inference runs")
    wait_for(lambda: _running_pods(cluster, inference), 60, "the inference Pod to run")

    cluster.delete_job(inference)
    back = wait_for(lambda: (w := cluster.workload_of(training)) and admitted_in(w) == "c12-training-cq" and w,
                    120, "the training Workload to be admitted again")
    assert back["metadata"]["uid"] == preempted["metadata"]["uid"], "same Workload, same Job"
    # Kueue admits the Workload first and unsuspends its Job in the next reconcile: wait for that, not one read.
    job = wait_for(lambda: (j := cluster.read_job(training)) and j.spec.suspend is False and j, 30,
                   "the re-admitted training Job to be unsuspended")
    assert (job.metadata.uid, job.spec.suspend) == (training.metadata.uid, False)
    wait_for(lambda: _running_pods(cluster, training), 60, "the training Pod to run again")
