"""Benchmark of the TrainJob round trip through the real Kueue, Kubeflow Trainer and JobSet controllers.

Run: ``.venv/bin/python -m kueue_cohorts.benchmarks.trainjob [--round-trips 10]`` (binaries from ``python -m
kueue_cohorts.toolchain ensure``).
Prints the figures; ``--write`` rewrites ``benchmarks/results/trainjob.json``.

A fresh sandbox gets the dev stack with the real ``pulumi up``; a TrainJob of the dev stack's TrainingRuntime is
queued to the training LocalQueue and runs while borrowing the whole GPU slice. Per round trip:

* reclaim: an inference Deployment (Kueue's deployment integration) is scaled 0 -> 1; measured from the scale
  request to (a) the TrainJob's Workload ``Preempted=True`` (reason InCohortReclamation), (b) the last training
  Pod gone, (c) the inference Pod Running;
* return: the Deployment is scaled 1 -> 0; measured to (d) the Workload ``Admitted=True`` again and (e) a training
  Pod Running again (TrainJob and JobSet resumed by Kueue, the Trainer and the JobSet controller).

Times are polled every 50 ms, so each figure is accurate to about 50 ms plus one API round trip.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any, Callable

from kubernetes import client as k8s
from kubernetes import config as kconfig

from kueue_cohorts import PROJECT_ROOT
from kueue_cohorts.benchmarks import add_write_flag, json_object, save, summary
from kueue_cohorts.benchmarks.sandbox import SLICE, _percentile, apply_dev_stack, machine, scratch_dirs
from kueue_cohorts.components.checks.validation import load_stack_file
from kueue_cohorts.components.model.runtime import render_trainjob
from kueue_cohorts.components.settings.stackfile import stack_path
from kueue_cohorts.deploy import engine
from kueue_cohorts.policy.rules.vocabulary.objects import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from kueue_cohorts.sandbox.cluster import Sandbox
from kueue_cohorts.sandbox.paths import SandboxPaths
from kueue_cohorts.toolchain import versions

REPO = PROJECT_ROOT
RESULTS = REPO / "kueue_cohorts" / "benchmarks" / "results" / "trainjob.json"
KUEUE = ("kueue.x-k8s.io", "v1beta2")
TRAINER = ("trainer.kubeflow.org", "v1alpha1")
TRAINING_NS, INFERENCE_NS, JOB = "c12-training", "c12-inference", "bench-tj"
POLL_S = 0.05


def _until(fn: Callable[[], bool], start: float, what: str, timeout: float = 180) -> float:
    """Poll ``fn`` every 50 ms; return seconds since ``start`` when it holds. Raises TimeoutError naming ``what``."""
    while not fn():
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(POLL_S)
    return time.monotonic() - start


def _condition(wl: dict[str, Any] | None, kind: str) -> bool:
    return wl is not None and any(c["type"] == kind and c["status"] == "True"
                                  for c in (wl.get("status") or {}).get("conditions") or [])


def _deployment(replicas: int) -> k8s.V1Deployment:
    labels = {"app": JOB, QUEUE_NAME_LABEL: "c12-inference-lq", PRIORITY_CLASS_LABEL: "c12-inference-prio"}
    container = k8s.V1Container(name="predictor", image="registry.invalid/bench",
                                resources=k8s.V1ResourceRequirements(requests=SLICE, limits=SLICE))
    return k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name=JOB, namespace=INFERENCE_NS),
        spec=k8s.V1DeploymentSpec(replicas=replicas, selector=k8s.V1LabelSelector(match_labels={"app": JOB}),
                                  template=k8s.V1PodTemplateSpec(
                                      metadata=k8s.V1ObjectMeta(labels=labels),
                                      spec=k8s.V1PodSpec(containers=[container], termination_grace_period_seconds=0))))


def measure(root: Path, work: Path, round_trips: int) -> dict[str, Any]:
    """Run ``round_trips`` reclaim/return cycles on the sandbox at ``root``; return the figures in seconds."""

    stack, pulumi_up = apply_dev_stack(work)
    api: k8s.ApiClient = kconfig.new_client_from_config(config_file=str(root / "kubeconfig"))
    core, apps, custom = k8s.CoreV1Api(api), k8s.AppsV1Api(api), k8s.CustomObjectsApi(api)
    runtime_settings = load_stack_file(stack_path("dev", REPO)).training_runtime
    if runtime_settings is None:
        raise RuntimeError("stacks/Pulumi.dev.yaml has no trainingRuntime: the TrainJob benchmark needs one")
    t = time.monotonic()
    tj = json_object(custom.create_namespaced_custom_object(*TRAINER, TRAINING_NS, "trainjobs", render_trainjob(
        JOB, TRAINING_NS, runtime_settings.name, "c12-training-lq", "c12-training-prio")))
    selector = f"kueue.x-k8s.io/job-uid={tj['metadata']['uid']}"

    def workload() -> dict[str, Any] | None:
        listed = json_object(custom.list_namespaced_custom_object(*KUEUE, TRAINING_NS, "workloads",
                                                                  label_selector=selector))
        items: list[dict[str, Any]] = listed["items"]
        return items[0] if items else None

    def training_pods(phase: str | None = None) -> list[k8s.V1Pod]:
        pods = core.list_namespaced_pod(TRAINING_NS, label_selector=f"jobset.sigs.k8s.io/jobset-name={JOB}").items
        return [p for p in pods if not (p.metadata and p.metadata.deletion_timestamp)
                and (phase is None or (p.status is not None and p.status.phase == phase))]

    def inference_running() -> bool:
        return any(p.status is not None and p.status.phase == "Running"
                   and not (p.spec is not None and p.spec.scheduling_gates)
                   for p in core.list_namespaced_pod(INFERENCE_NS, label_selector=f"app={JOB}").items)

    first_run = _until(lambda: bool(training_pods("Running")), t, "first training Pod Running")
    apps.create_namespaced_deployment(INFERENCE_NS, _deployment(0))
    rounds = []
    for _ in range(round_trips):
        start = time.monotonic()
        apps.patch_namespaced_deployment_scale(JOB, INFERENCE_NS, {"spec": {"replicas": 1}})
        r = {"preempted_s": _until(lambda: _condition(workload(), "Preempted"), start, "training Preempted")}
        r["training_pods_gone_s"] = _until(lambda: not training_pods(), start, "training Pods gone")
        r["inference_running_s"] = _until(inference_running, start, "inference Pod Running")
        start = time.monotonic()
        apps.patch_namespaced_deployment_scale(JOB, INFERENCE_NS, {"spec": {"replicas": 0}})
        r["readmitted_s"] = _until(lambda: _condition(workload(), "Admitted")
                                   and not _condition(workload(), "Preempted"), start, "training re-admitted")
        r["training_running_again_s"] = _until(lambda: bool(training_pods("Running")), start,
                                               "training Pod Running again")
        rounds.append(r)
    apps.delete_namespaced_deployment(JOB, INFERENCE_NS)
    custom.delete_namespaced_custom_object(*TRAINER, TRAINING_NS, "trainjobs", JOB)

    stack.destroy(**engine.run_kwargs(stack, policy=False, color="never"))
    summary = {}
    for key in rounds[0]:
        samples = [r[key] for r in rounds]
        summary[key] = {"p50": round(statistics.median(samples), 3), "p95": round(_percentile(samples, 95), 3),
                        "max": round(max(samples), 3)}
    return {"round_trips": round_trips, "pulumi_up_dev_stack_s": round(pulumi_up, 2),
            "first_trainjob_running_s": round(first_run, 3), "summary_s": summary,
            "rounds_s": [{k: round(v, 3) for k, v in r.items()} for r in rounds]}


def main(argv: list[str] | None = None) -> int:
    """Start a sandbox, measure, stop it, print the figures (``--write``: record them in :data:`RESULTS`); return 0."""
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m kueue_cohorts.benchmarks.trainjob",
                                     description=summary(__doc__))
    parser.add_argument("--round-trips", type=int, default=10)
    add_write_flag(parser)
    args = parser.parse_args(argv)

    load_before = os.getloadavg()
    with scratch_dirs() as (root, work):
        Sandbox(SandboxPaths(root)).up(stack_path("dev"))
        figures = measure(root, work, args.round_trips)
    pins = versions.load()
    result = {
        "what": "TrainJob round trip through the real Kueue, Kubeflow Trainer and JobSet controllers on the dev "
                "stack: inference Deployment scaled 0->1 (training preempted, Pods gone, inference Running) and "
                "1->0 (training re-admitted and Running again); seconds from the scale request, 50 ms polling",
        **figures,
        "versions": {b: pins.entry_for(b).version for b in
                     ("kube-apiserver", "kwok", "kueue", "jobset-controller-manager", "trainer-controller-manager")},
        "machine": machine(load_before),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    print(f"first TrainJob Running {figures['first_trainjob_running_s']:.2f} s after create "
          f"(pulumi up of the dev stack {figures['pulumi_up_dev_stack_s']:.1f} s)")
    for key, s in figures["summary_s"].items():
        print(f"{key:26s} p50 {s['p50']:.2f} s  p95 {s['p95']:.2f} s  max {s['max']:.2f} s  "
              f"({figures['round_trips']} round trips)")
    save("trainjob", result, args.write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
