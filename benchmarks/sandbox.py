"""Benchmark of the sandbox: start time (cold and warm) and inference admission latency under borrowing training.

Run: ``.venv/bin/python -m benchmarks.sandbox [--round-trips 20]`` (binaries from ``python -m toolchain ensure``).
Writes ``benchmarks/results/sandbox.json`` and prints the figures.

* cold start: ``up`` in an empty state directory (new certificates, empty etcd, every CRD and webhook installed);
* warm start: ``down`` then ``up`` of the same state directory (certificates and etcd data kept);
  both with the toolchain's binaries already built (the toolchain's own build time is reported by
  ``python -m toolchain ensure``);
* latency: the dev stack applied with the real ``pulumi up``; a training Job borrowing the whole GPU slice is
  admitted; then, per round trip, an inference Job is created and the time until its Workload has
  ``Admitted=True`` is measured from the creation request to the watch event (the training Workload is
  preempted on the way); the inference Job is deleted and training is re-admitted before the next round.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Iterator

from kubernetes import client as k8s
from kubernetes import config as kconfig
from kubernetes import watch

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "sandbox.json"
KUEUE = ("kueue.x-k8s.io", "v1beta2")
SLICE = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "20",
         "nvidia.com/gpumem": "2048"}


def _percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile ``q`` (0-100) of ``samples``."""
    ordered = sorted(samples)
    rank = max(1, round(q / 100 * len(ordered) + 0.4999))
    return ordered[min(rank, len(ordered)) - 1]


def _job(ns: str, name: str, queue: str, prio: str) -> k8s.V1Job:
    labels = {"kueue.x-k8s.io/queue-name": queue, "kueue.x-k8s.io/priority-class": prio}
    container = k8s.V1Container(name="main", image="registry.invalid/bench", command=["sleep", "infinity"],
                                resources=k8s.V1ResourceRequirements(requests=SLICE, limits=SLICE))
    return k8s.V1Job(metadata=k8s.V1ObjectMeta(name=name, namespace=ns, labels=labels), spec=k8s.V1JobSpec(
        backoff_limit=0, template=k8s.V1PodTemplateSpec(metadata=k8s.V1ObjectMeta(labels=labels), spec=k8s.V1PodSpec(
            containers=[container], restart_policy="Never", termination_grace_period_seconds=0))))


def _admitted(wl: dict) -> bool:
    return any(c["type"] == "Admitted" and c["status"] == "True" for c in (wl.get("status") or {}).get("conditions") or [])


def _wait_admitted(custom: k8s.CustomObjectsApi, ns: str, job_uid: str, start: float | None = None,
                   timeout: int = 120) -> float:
    """Watch Workloads in ``ns`` until the one of ``job_uid`` is Admitted; return seconds since ``start``."""
    selector = f"kueue.x-k8s.io/job-uid={job_uid}"
    listed = custom.list_namespaced_custom_object(*KUEUE, ns, "workloads", label_selector=selector)
    start = time.monotonic() if start is None else start
    if any(_admitted(w) for w in listed["items"]):
        return time.monotonic() - start
    w = watch.Watch()
    for event in w.stream(custom.list_namespaced_custom_object, *KUEUE, ns, "workloads", label_selector=selector,
                          resource_version=listed["metadata"]["resourceVersion"], timeout_seconds=timeout):
        if _admitted(event["object"]):
            w.stop()
            return time.monotonic() - start
    raise TimeoutError(f"Workload of Job {job_uid} in {ns} not admitted within {timeout}s")


def _delete(batch: k8s.BatchV1Api, ns: str, name: str) -> None:
    batch.delete_namespaced_job(name, ns, body=k8s.V1DeleteOptions(propagation_policy="Foreground"))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            batch.read_namespaced_job(name, ns)
        except k8s.ApiException as exc:
            if exc.status == 404:
                return
            raise
        time.sleep(0.05)
    raise TimeoutError(f"Job {ns}/{name} not deleted")


def measure_start(root: Path) -> dict:
    """Cold then warm ``up`` of a sandbox in ``root``; return seconds per step for both."""
    from sandbox.cluster import Sandbox, stack_file
    from sandbox.paths import SandboxPaths

    box = Sandbox(SandboxPaths(root))
    cold = box.up(stack_file("dev")).seconds
    box.down()
    warm = box.up(stack_file("dev")).seconds
    return {"cold": cold, "warm": warm}


def apply_dev_stack(work: Path):
    """``pulumi up`` the dev stack from a scratch copy of the project under ``work`` (own file backend) into the
    sandbox named by ``$KUEUE_COHORTS_SANDBOX_DIR``; return ``(Automation API stack, seconds the up took)``."""
    from deploy import engine
    from deploy.scratch import Project

    work.mkdir(parents=True, exist_ok=True)
    stack = Project(work).open("dev")
    t = time.monotonic()
    stack.up(**engine.run_kwargs(stack, policy=False, color="never"))
    return stack, time.monotonic() - t


def measure_latency(root: Path, work: Path, round_trips: int) -> dict:
    """Apply the dev stack with pulumi up into the running sandbox at ``root``; return admission latencies."""
    from deploy import engine

    stack, pulumi_up = apply_dev_stack(work)

    api = kconfig.new_client_from_config(config_file=str(root / "kubeconfig"))
    batch, custom = k8s.BatchV1Api(api), k8s.CustomObjectsApi(api)
    training = batch.create_namespaced_job("c12-training", _job("c12-training", "bench-train", "c12-training-lq",
                                                                 "c12-training-prio"))
    _wait_admitted(custom, "c12-training", training.metadata.uid)
    samples = []
    for i in range(round_trips):
        start = time.monotonic()
        job = batch.create_namespaced_job("c12-inference", _job("c12-inference", f"bench-serve-{i}",
                                                                 "c12-inference-lq", "c12-inference-prio"))
        samples.append(_wait_admitted(custom, "c12-inference", job.metadata.uid, start=start))
        _delete(batch, "c12-inference", job.metadata.name)
        _wait_admitted(custom, "c12-training", training.metadata.uid)
    _delete(batch, "c12-training", "bench-train")
    stack.destroy(**engine.run_kwargs(stack, policy=False, color="never"))
    return {
        "round_trips": round_trips,
        "p50_s": round(statistics.median(samples), 4),
        "p95_s": round(_percentile(samples, 95), 4),
        "min_s": round(min(samples), 4),
        "max_s": round(max(samples), 4),
        "samples_s": [round(s, 4) for s in samples],
        "pulumi_up_dev_stack_s": round(pulumi_up, 2),
    }


def machine(load_before: tuple[float, float, float]) -> dict:
    """Return the machine facts recorded with every sandbox figure: CPUs, Python, kernel, load averages (1, 5,
    15 min) before (``load_before``, from ``os.getloadavg()``) and now."""
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release(),
            "loadavg_1_5_15_before": [round(x, 2) for x in load_before],
            "loadavg_1_5_15_after": [round(x, 2) for x in os.getloadavg()]}


@contextlib.contextmanager
def scratch_dirs() -> Iterator[tuple[Path, Path]]:
    """Yield ``(sandbox state dir, project dir)`` in a temporary directory, with ``$KUEUE_COHORTS_SANDBOX_DIR``
    set to the first (the inline Pulumi program reads the kubeconfig path from it); the sandbox, if started
    there, is stopped and everything removed afterwards."""
    from sandbox.cluster import Sandbox
    from sandbox.paths import STATE_DIR_ENV, SandboxPaths

    with tempfile.TemporaryDirectory(prefix="kueue-cohorts-bench-") as tmp:
        root = Path(tmp) / "sandbox"
        os.environ[STATE_DIR_ENV] = str(root)
        try:
            yield root, Path(tmp) / "project"
        finally:
            Sandbox(SandboxPaths(root)).down()


def main(argv: list[str] | None = None) -> int:
    """Run both measurements, print them, write :data:`RESULTS`; return 0."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sandbox", description=__doc__.split("\n")[0])
    parser.add_argument("--round-trips", type=int, default=20)
    args = parser.parse_args(argv)
    from toolchain import versions

    load_before = os.getloadavg()
    with scratch_dirs() as (root, work):
        start = measure_start(root)
        latency = measure_latency(root, work, args.round_trips)
    pins = versions.load()
    result = {
        "what": "sandbox start time (cold: empty state dir; warm: down+up of the same state dir) and inference "
                "admission latency (inference Job created -> its Workload Admitted=True, watch event) while a "
                "training Job borrows the whole GPU slice of the dev stack",
        "start_s": start,
        "inference_admission_latency": latency,
        "versions": {b: pins.entry_for(b).version for b in
                     ("etcd", "kube-apiserver", "kwok", "kueue", "pulumi", "pulumi-resource-kubernetes")},
        "machine": machine(load_before),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"sandbox start: cold {start['cold']['total']:.1f} s, warm {start['warm']['total']:.1f} s")
    print(f"inference admission latency over {latency['round_trips']} round trips: p50 {latency['p50_s'] * 1000:.0f} ms, "
          f"p95 {latency['p95_s'] * 1000:.0f} ms (max {latency['max_s'] * 1000:.0f} ms)")
    print(f"written to {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
