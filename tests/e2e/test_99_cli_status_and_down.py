"""`kueue-cohorts sandbox status` reports a healthy sandbox with its ClusterQueues, and `kueue-cohorts sandbox down`
stops every process it started (runs last: it stops the session's sandbox)."""

import os
import subprocess
import sys

from e2e_support import REPO

from kueue_cohorts.sandbox import process
from kueue_cohorts.sandbox.cluster import COMPONENTS
from kueue_cohorts.sandbox.paths import STATE_DIR_ENV


def _cli(sandbox, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, STATE_DIR_ENV: str(sandbox.paths.root)}
    return subprocess.run([sys.executable, "-m", "kueue_cohorts", "sandbox", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def test_status_then_down_leaves_no_process(sandbox, dev_stack):
    status = _cli(sandbox, "status")
    assert status.returncode == 0, status.stdout + status.stderr
    for component in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kueue",
                      "jobset-controller-manager", "trainer-controller-manager", "kserve-manager"):
        assert any(line.startswith(component) and " ok " in line for line in status.stdout.splitlines()), status.stdout
    lines = [line.strip() for line in status.stdout.splitlines()]
    assert "cohort c12-shared" in lines  # the cohorts view (kueue-cohorts status --all) of the sandbox
    assert any(line.startswith("c12-training-cq (training)") for line in lines), status.stdout
    assert "nodes: 1/1 Ready" in status.stdout

    records = list(sandbox.state().processes.values())
    assert sorted(r.name for r in records) == sorted(COMPONENTS)
    down = _cli(sandbox, "down")
    assert down.returncode == 0, down.stderr
    assert [r.name for r in records if process.alive(r)] == []
    assert [r.name for r in records if process.group_alive(r)] == []  # nothing left in their process groups
    assert not sandbox.state().processes
    assert _cli(sandbox, "status").returncode == 1


def test_up_after_down_hands_the_nodes_to_the_new_kwok_at_once(sandbox, cluster):
    """kwok takes over a node only when its Lease is free; ``up`` releases the Leases the stopped kwok held, so the
    restarted kwok holds gpu-0 and runs Pods right away instead of after the 40 s lease duration."""
    from e2e_support import wait_for
    from kubernetes import client as k8s

    up = _cli(sandbox, "up", "--stack", "dev")
    assert up.returncode == 0, up.stdout + up.stderr
    coordination = k8s.CoordinationV1Api(cluster.api)
    old = coordination.read_namespaced_lease("gpu-0", "kube-node-lease").spec.holder_identity
    down = _cli(sandbox, "down")
    assert down.returncode == 0, down.stderr
    up = _cli(sandbox, "up", "--stack", "dev")
    assert up.returncode == 0, up.stdout + up.stderr
    assert "released the node Leases of the previous kwok: gpu-0" in up.stderr

    def holder() -> str | None:
        try:
            return coordination.read_namespaced_lease("gpu-0", "kube-node-lease").spec.holder_identity
        except k8s.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    new = wait_for(lambda: (h := holder()) and h != old and h, 15, "the new kwok to hold gpu-0's Lease")
    assert new.split("_")[0] == old.split("_")[0], "same host, new process identity"
    pod = k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="after-restart", namespace="default"),
                    spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="c", image="registry.invalid/x")],
                                       termination_grace_period_seconds=0))
    cluster.core.create_namespaced_pod("default", pod)
    wait_for(lambda: cluster.core.read_namespaced_pod("after-restart", "default").status.phase == "Running", 15,
             "a Pod to run on the restarted kwok node")
    cluster.core.delete_namespaced_pod("after-restart", "default")
