"""Benchmark of the sandbox: start time (cold and warm) and inference admission latency under borrowing training.

Run: ``.venv/bin/python -m kueue_cohorts.benchmarks.sandbox [--round-trips 25] [--starts 3] [--part start|latency|all]
[--write]`` (binaries from ``python -m kueue_cohorts.toolchain ensure``). Prints the figures; rewrites
``benchmarks/results/sandbox.json`` only with ``--write``. Every figure is recorded with the machine's load
average (1, 5, 15 min) just before and just after it was measured: on this shared 2-core machine a load above 2
means other work competed for the CPUs.

* cold start: ``up`` in an empty state directory (new certificates, empty etcd, every CRD and webhook installed);
* warm start: ``down`` then ``up`` of the same state directory (certificates and etcd data kept);
  both with the toolchain's binaries already built (the toolchain's own build time is reported by
  ``python -m kueue_cohorts.toolchain ensure``) and in-process (``Sandbox.up``, the Python imports already done); the
  phases
  ``Sandbox.up`` reports are printed per start;
* latency: the dev stack applied with the real ``pulumi up``; a training Job borrowing the whole GPU slice is
  admitted; then, per round trip, an inference Job is created and the time until its Workload has
  ``Admitted=True`` is measured from the creation request to the watch event (the training Workload is
  preempted on the way); the inference Job is deleted and training is re-admitted before the next round.
  The path is broken down from watch events of Jobs, Pods and Workloads received by this process (millisecond
  clock; the objects' own timestamps have one-second resolution): inference Workload created, training Workload
  Evicted (preemption issued), training Job suspended, training Job ``status.active`` 0, training Pod gone,
  training Workload ``QuotaReserved=False`` (quota released), inference Workload ``QuotaReserved=True``,
  ``Admitted=True``, and the inference pod Running (``pod_running``): the training Job's pods carry the victim's real
  ``terminationGracePeriodSeconds`` (the dev stack's TrainingRuntime's, ``--grace`` to change it) and the sandbox's
  kwok keeps a deleted pod on its node for that long, as a kubelet does, so the inference pod waits for it after
  Kueue has admitted it (KEP-6143: a Job victim's quota is released when its pods start terminating). Both the
  admission latency and the time to Running are reported; each round trip takes at least the grace period.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from kubernetes import client as k8s
from kubernetes import config as kconfig
from kubernetes import watch
from pulumi import automation as auto

from kueue_cohorts import PROJECT_ROOT
from kueue_cohorts.benchmarks import json_object, summary
from kueue_cohorts.components.checks.validation import load_stack_file
from kueue_cohorts.components.settings.stackfile import stack_path
from kueue_cohorts.deploy import engine
from kueue_cohorts.deploy.scratch import Project
from kueue_cohorts.policy.rules.vocabulary.objects import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from kueue_cohorts.sandbox.cluster import Sandbox
from kueue_cohorts.sandbox.paths import STATE_DIR_ENV, SandboxPaths
from kueue_cohorts.toolchain import versions

REPO = PROJECT_ROOT
RESULTS = REPO / "kueue_cohorts" / "benchmarks" / "results" / "sandbox.json"
KUEUE = ("kueue.x-k8s.io", "v1beta2")
SLICE = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "20",
         "nvidia.com/gpumem": "2048"}


def _percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile ``q`` (0-100) of ``samples``."""
    ordered = sorted(samples)
    rank = max(1, round(q / 100 * len(ordered) + 0.4999))
    return ordered[min(rank, len(ordered)) - 1]


def _job(ns: str, name: str, queue: str, prio: str, grace: int = 0) -> k8s.V1Job:
    labels = {QUEUE_NAME_LABEL: queue, PRIORITY_CLASS_LABEL: prio}
    container = k8s.V1Container(name="main", image="registry.invalid/bench", command=["sleep", "infinity"],
                                resources=k8s.V1ResourceRequirements(requests=SLICE, limits=SLICE))
    return k8s.V1Job(metadata=k8s.V1ObjectMeta(name=name, namespace=ns, labels=labels), spec=k8s.V1JobSpec(
        backoff_limit=0, template=k8s.V1PodTemplateSpec(metadata=k8s.V1ObjectMeta(labels=labels), spec=k8s.V1PodSpec(
            containers=[container], restart_policy="Never", termination_grace_period_seconds=grace))))


def _admitted(wl: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Admitted" and c["status"] == "True" for c in (wl.get("status") or {}).get("conditions") or []
    )


def _created(job: k8s.V1Job) -> tuple[str, str]:
    """The (name, uid) of a Job as the apiserver returned it from the create. Raises RuntimeError without them."""
    meta = job.metadata
    if meta is None or not meta.name or not meta.uid:
        raise RuntimeError(f"the apiserver returned a Job without name or uid: {meta}")
    return meta.name, meta.uid


def _wait_admitted(custom: k8s.CustomObjectsApi, ns: str, job_uid: str, start: float | None = None,
                   timeout: int = 120) -> float:
    """Watch Workloads in ``ns`` until the one of ``job_uid`` is Admitted; return seconds since ``start``."""
    selector = f"kueue.x-k8s.io/job-uid={job_uid}"
    listed = json_object(custom.list_namespaced_custom_object(*KUEUE, ns, "workloads", label_selector=selector))
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


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def measure_start(root: Path, starts: int = 1) -> dict[str, Any]:
    """``starts`` times: a cold ``up`` of a sandbox in the empty state directory ``root``, then ``down`` and a warm
    ``up`` of the same directory (between two rounds ``down --purge`` empties it; the last one stays up); return
    ``{"cold": [...], "warm": [...]}``, one dict per start with the seconds per phase (``Sandbox.up``'s report),
    ``total`` and the load averages before and after."""

    out: dict[str, list[dict[str, Any]]] = {"cold": [], "warm": []}
    box = Sandbox(SandboxPaths(root))
    for i in range(starts):
        for kind in ("cold", "warm"):
            if kind == "warm":
                box.down()
            before = _load()
            seconds = box.up(stack_path("dev")).seconds
            out[kind].append({**{k: round(v, 3) for k, v in seconds.items()}, "loadavg_before": before,
                              "loadavg_after": _load()})
            print(f"  {kind} start {i + 1}: " + ", ".join(f"{k} {v:.2f} s" for k, v in seconds.items())
                  + f" (load {before[0]:.2f} -> {_load()[0]:.2f})", flush=True)
        if i < starts - 1:
            box.down(purge=True)
    return out


def _median_start(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per phase, the median over ``runs`` (seconds)."""
    keys = [k for k in runs[0] if not k.startswith("loadavg")]
    return {k: round(statistics.median(r[k] for r in runs), 3) for k in keys}


def apply_dev_stack(work: Path) -> tuple[auto.Stack, float]:
    """``pulumi up`` the dev stack from a scratch copy of the project under ``work`` (own file backend) into the
    sandbox named by ``$KUEUE_COHORTS_SANDBOX_DIR``; return ``(Automation API stack, seconds the up took)``."""

    work.mkdir(parents=True, exist_ok=True)
    stack = Project(work).open("dev")
    t = time.monotonic()
    stack.up(**engine.run_kwargs(stack, policy=False, color="never"))
    return stack, time.monotonic() - t


class EventLog:
    """Watches Workloads, Jobs and Pods of the given namespaces in background threads and keeps every event as
    ``(monotonic seconds at receipt, kind, type, object dict)``; :meth:`stop` ends the watches."""

    def __init__(self, api: k8s.ApiClient, namespaces: tuple[str, ...]) -> None:
        self.events: list[tuple[float, str, str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._watches: list[watch.Watch] = []
        self._stop = threading.Event()
        custom, batch, core = k8s.CustomObjectsApi(api), k8s.BatchV1Api(api), k8s.CoreV1Api(api)
        sanitize = api.sanitize_for_serialization
        for ns in namespaces:
            for kind, fn, args in (
                ("Workload", custom.list_namespaced_custom_object, (*KUEUE, ns, "workloads")),
                ("Job", batch.list_namespaced_job, (ns,)),
                ("Pod", core.list_namespaced_pod, (ns,)),
            ):
                thread = threading.Thread(target=self._run, args=(kind, fn, args, sanitize), daemon=True)
                thread.start()

    def _run(self, kind: str, fn: Callable[..., object], args: tuple[str, ...],
             sanitize: Callable[[object], Any]) -> None:
        while not self._stop.is_set():
            w = watch.Watch()
            self._watches.append(w)
            try:
                for event in w.stream(fn, *args, timeout_seconds=300):
                    obj = event["object"]
                    obj = obj if isinstance(obj, dict) else sanitize(obj)
                    with self._lock:
                        self.events.append((time.monotonic(), kind, event["type"], obj))
            except Exception:  # noqa: BLE001 - a watch ended by stop() or by the apiserver: start again
                if self._stop.is_set():
                    return

    def since(self, t0: float) -> list[tuple[float, str, str, dict[str, Any]]]:
        """Events received at or after ``t0``."""
        with self._lock:
            return [e for e in self.events if e[0] >= t0]

    def stop(self) -> None:
        """End every watch."""
        self._stop.set()
        for w in self._watches:
            w.stop()


def _condition(obj: dict[str, Any], kind: str) -> str | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == kind:
            return str(c["status"])
    return None


def _job_uid(wl: dict[str, Any]) -> str:
    return str(((wl.get("metadata") or {}).get("labels") or {}).get("kueue.x-k8s.io/job-uid", ""))


#: Milestones of one round trip, in the order the path goes through them (see the module docstring).
MILESTONES = ("workload_created", "preemption_issued", "victim_job_suspended", "victim_job_inactive",
              "victim_quota_released", "quota_reserved", "admitted", "victim_pod_gone", "pod_running")


def milestones(events: list[tuple[float, str, str, dict[str, Any]]], t0: float, serve_uid: str,
               train_uid: str) -> dict[str, Any]:
    """Return ``{milestone: seconds after t0}`` (first occurrence; absent when not seen) from ``events`` of one
    round trip whose inference Job has ``serve_uid`` and whose training Job has ``train_uid``."""
    seen: dict[str, float] = {}

    def mark(name: str, t: float) -> None:
        seen.setdefault(name, round(t - t0, 4))

    for t, kind, typ, obj in events:
        meta = obj.get("metadata") or {}
        if kind == "Workload":
            uid = _job_uid(obj)
            if uid == serve_uid:
                mark("workload_created", t)
                if _condition(obj, "QuotaReserved") == "True":
                    mark("quota_reserved", t)
                if _condition(obj, "Admitted") == "True":
                    mark("admitted", t)
            elif uid == train_uid:
                if _condition(obj, "Evicted") == "True" or _condition(obj, "Preempted") == "True":
                    mark("preemption_issued", t)
                if "preemption_issued" in seen and _condition(obj, "QuotaReserved") != "True":
                    mark("victim_quota_released", t)
        elif kind == "Job" and meta.get("uid") == train_uid:
            if (obj.get("spec") or {}).get("suspend"):
                mark("victim_job_suspended", t)
                if not (obj.get("status") or {}).get("active"):
                    mark("victim_job_inactive", t)
        elif kind == "Pod":
            owners = {o.get("uid") for o in meta.get("ownerReferences") or []}
            if typ == "DELETED" and train_uid in owners:
                mark("victim_pod_gone", t)
            if serve_uid in owners and (obj.get("status") or {}).get("phase") == "Running":
                mark("pod_running", t)
    return seen


def breakdown(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Per milestone, the median and p95 (seconds after the inference Job's create request) over ``rounds``, and
    the median step from the previous milestone."""
    out = {}
    prev = None
    for name in MILESTONES:
        values = [r[name] for r in rounds if name in r]
        if not values:
            continue
        entry = {"p50_s": round(statistics.median(values), 4), "p95_s": round(_percentile(values, 95), 4),
                 "seen_in": len(values)}
        if prev is not None:
            steps = [r[name] - r[prev] for r in rounds if name in r and prev in r]
            if steps:
                entry["step_from_previous_p50_s"] = round(statistics.median(steps), 4)
        out[name] = entry
        prev = name
    return out


def dev_grace() -> int:
    """The dev stack's TrainingRuntime grace period in seconds (the victim's real one)."""
    runtime = load_stack_file(stack_path("dev")).training_runtime
    return int(runtime.grace_period_seconds) if runtime is not None else 0


def _wait_running(core: k8s.CoreV1Api, ns: str, job_name: str, start: float, timeout: float = 600) -> float:
    """Poll until a pod of Job ``job_name`` in ``ns`` is Running; return seconds since ``start``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = core.list_namespaced_pod(ns, label_selector=f"batch.kubernetes.io/job-name={job_name}").items
        if any(p.status is not None and p.status.phase == "Running" for p in pods):
            return time.monotonic() - start
        time.sleep(0.1)
    raise TimeoutError(f"no pod of Job {ns}/{job_name} Running within {timeout} s")


def measure_latency(root: Path, work: Path, round_trips: int, grace: int) -> dict[str, Any]:
    """Apply the dev stack with pulumi up into the running sandbox at ``root``; with a training Job whose pods have
    ``grace`` seconds of terminationGracePeriodSeconds borrowing the GPU slice, return per round trip the inference
    admission latency and the time until its pod is Running, their breakdown into milestones (:data:`MILESTONES`)
    and the load averages before and after."""

    stack, pulumi_up = apply_dev_stack(work)

    api: k8s.ApiClient = kconfig.new_client_from_config(config_file=str(root / "kubeconfig"))
    batch, custom = k8s.BatchV1Api(api), k8s.CustomObjectsApi(api)
    log = EventLog(kconfig.new_client_from_config(config_file=str(root / "kubeconfig")),
                   ("c12-inference", "c12-training"))
    core = k8s.CoreV1Api(api)
    training = batch.create_namespaced_job("c12-training", _job("c12-training", "bench-train", "c12-training-lq",
                                                                 "c12-training-prio", grace))
    training_uid = _created(training)[1]
    _wait_admitted(custom, "c12-training", training_uid)
    _wait_running(core, "c12-training", "bench-train", time.monotonic())
    samples, running, rounds = [], [], []
    before = _load()
    for i in range(round_trips):
        start = time.monotonic()
        job = batch.create_namespaced_job("c12-inference", _job("c12-inference", f"bench-serve-{i}",
                                                                 "c12-inference-lq", "c12-inference-prio"))
        job_name, job_uid = _created(job)
        samples.append(_wait_admitted(custom, "c12-inference", job_uid, start=start))
        running.append(_wait_running(core, "c12-inference", job_name, start, timeout=grace + 120))
        time.sleep(0.2)  # let the watches deliver the last events of this round
        rounds.append(milestones(log.since(start), start, job_uid, training_uid))
        _delete(batch, "c12-inference", job_name)
        _wait_admitted(custom, "c12-training", training_uid)
        _wait_running(core, "c12-training", "bench-train", time.monotonic())
    after = _load()
    log.stop()
    _delete(batch, "c12-training", "bench-train")
    stack.destroy(**engine.run_kwargs(stack, policy=False, color="never"))
    return {
        "round_trips": round_trips,
        "p50_s": round(statistics.median(samples), 4),
        "p95_s": round(_percentile(samples, 95), 4),
        "min_s": round(min(samples), 4),
        "max_s": round(max(samples), 4),
        "samples_s": [round(s, 4) for s in samples],
        "victim_grace_s": grace,
        "pod_running_p50_s": round(statistics.median(running), 3),
        "pod_running_p95_s": round(_percentile(running, 95), 3),
        "pod_running_samples_s": [round(s, 3) for s in running],
        "breakdown": breakdown(rounds),
        "rounds": rounds,
        "loadavg_before": before,
        "loadavg_after": after,
        "pulumi_up_dev_stack_s": round(pulumi_up, 2),
    }


def machine(load_before: tuple[float, float, float]) -> dict[str, Any]:
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

    with tempfile.TemporaryDirectory(prefix="kueue-cohorts-bench-") as tmp:
        root = Path(tmp) / "sandbox"
        os.environ[STATE_DIR_ENV] = str(root)
        try:
            yield root, Path(tmp) / "project"
        finally:
            Sandbox(SandboxPaths(root)).down()


def main(argv: list[str] | None = None) -> int:
    """Run the measurements, print them, and with ``--write`` rewrite :data:`RESULTS`; return 0."""
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m kueue_cohorts.benchmarks.sandbox",
                                     description=summary(__doc__))
    parser.add_argument("--round-trips", type=int, default=5,
                        help="inference round trips (each waits for the victim's grace period)")
    parser.add_argument("--grace", type=int, default=None,
                        help="the training pods' terminationGracePeriodSeconds (default: the dev stack runtime's)")
    parser.add_argument("--starts", type=int, default=1, help="cold+warm start pairs (medians reported)")
    parser.add_argument("--part", choices=("all", "start", "latency"), default="all")
    parser.add_argument("--write", action="store_true", help=f"rewrite {RESULTS.relative_to(REPO)}")
    args = parser.parse_args(argv)

    load_before = os.getloadavg()
    start = latency = None
    with scratch_dirs() as (root, work):
        if args.part in ("all", "start"):
            start = measure_start(root, args.starts)
        if args.part in ("all", "latency"):
            if start is None:

                Sandbox(SandboxPaths(root)).up(stack_path("dev"))
            latency = measure_latency(root, work, args.round_trips,
                                      dev_grace() if args.grace is None else args.grace)
    pins = versions.load()
    result: dict[str, Any] = {
        "what": "sandbox start time (cold: empty state dir; warm: down+up of the same state dir; seconds per phase "
                "of Sandbox.up) and inference admission latency (inference Job created -> its Workload "
                "Admitted=True, watch event) and until its pod is Running, while a training Job whose pods keep the "
                "dev stack runtime's grace period borrows the whole GPU slice of the dev stack, "
                "with its breakdown into milestones (seconds after the create request, from watch events)",
        "versions": {b: pins.entry_for(b).version for b in
                     ("etcd", "kube-apiserver", "kwok", "kueue", "pulumi", "pulumi-resource-kubernetes")},
        "machine": machine(load_before),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if start is not None:
        result["start_s"] = {"cold": _median_start(start["cold"]), "warm": _median_start(start["warm"]),
                             "runs": start}
        for kind in ("cold", "warm"):
            med = result["start_s"][kind]
            print(f"sandbox {kind} start (median of {len(start[kind])}): {med['total']:.1f} s = "
                  + ", ".join(f"{k} {v:.2f}" for k, v in med.items() if k != "total")
                  + f"; load {start[kind][0]['loadavg_before']} before the first")
    if latency is not None:
        result["inference_admission_latency"] = latency
        print(f"inference admission latency over {latency['round_trips']} round trips: p50 "
              f"{latency['p50_s'] * 1000:.0f} ms, p95 {latency['p95_s'] * 1000:.0f} ms (max "
              f"{latency['max_s'] * 1000:.0f} ms); load {latency['loadavg_before']} before, "
              f"{latency['loadavg_after']} after")
        print(f"inference pod Running after the reclaim (victim grace {latency['victim_grace_s']} s honoured): p50 "
              f"{latency['pod_running_p50_s']:.1f} s, p95 {latency['pod_running_p95_s']:.1f} s")
        print("  breakdown (ms after the inference Job's create request; p50, p95; step from the previous p50):")
        for name, entry in latency["breakdown"].items():
            step = entry.get("step_from_previous_p50_s")
            print(f"    {name:<24} {entry['p50_s'] * 1000:7.0f} {entry['p95_s'] * 1000:7.0f}"
                  + (f"   +{step * 1000:.0f}" if step is not None else "") + f"   ({entry['seen_in']} rounds)")
    if args.write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(result, indent=2) + "\n")
        print(f"written to {RESULTS}")
    else:
        print(f"(not written: pass --write to rewrite {RESULTS.relative_to(REPO)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
