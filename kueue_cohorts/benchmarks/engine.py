"""The engine against kubectl, side by side in one sandbox API server: ``pulumi up`` of N shared-pool tenants against
``kubectl apply --server-side`` of the same objects, and a no-change ``preview`` against ``kubectl diff --server-side``.

Run: ``python -m kueue_cohorts.benchmarks.engine [--tenants 100 500 1000] [--variant every-step no-policy qps-50 ...]
[--variant-max-tenants N] [--destroy] [--write]``. Prints a table (seconds, ratios, growth, load average);
``--write`` rewrites benchmarks/results/engine.json.

Per size N, in a fresh sandbox (real kube-apiserver, etcd, Kueue with its webhooks; ``python -m kueue_cohorts.sandbox
up``):

1. ``pulumi up``: ``python -m kueue_cohorts.deploy up --stack bench`` in a copy of the project (tracked files, the
checkout's
   .venv), exactly what ``make up`` runs: policy pack on, the engine settings of ``deploy``, a fresh file backend,
   and the engine passes the program chose (deploy/passes.py: one when it registers only what the assembler built,
   as the shipped program does; recorded as ``passes`` with the dry run's own seconds, ``dry_run_s``).
   The stack is a symmetric cohort of N tenants (a Namespace, a ClusterQueue and a LocalQueue each: 3N + 4
   resources with the stack, the provider, the ResourceFlavor and the cohort component).
2. ``preview``: ``python -m kueue_cohorts.deploy preview --stack bench --expect-no-changes`` right after; then the same
preview
   once more with ``PULUMI_DEBUG_GRPC`` (the engine logs every gRPC call with its duration): the breakdown of where a
   preview's time goes, seconds and calls per method (the program's ``Run`` and ``RegisterResource``, the provider's
   ``Check`` and ``Diff``, the pack's ``Remediate``, ``Analyze`` and ``AnalyzeStack``); not a timed figure (the log
   costs time itself).
3. ``kubectl apply --server-side``: the very objects Pulumi sent (the ``inputs`` of every kubernetes resource in
   the stack's state) under fresh names (every name's prefix ``<size>p-`` becomes ``<size>k-``), from one file,
   Namespaces first; then ``kubectl diff --server-side`` of the same file (no changes: exit code 0).
4. ``--variant every-step``: ``pulumi up`` again under fresh names with ``PULUMI_SKIP_CHECKPOINTS=false`` (a state
   checkpoint per step, Pulumi's default); ``no-policy``: with ``--no-policy``; ``two-pass``: the program with one
   ConfigMap added to ``__main__.py`` by hand (``HAND_ADDED``), which the assembler did not build, so ``deploy`` runs
   a preview with the pack before the update (the pass count is the program's, never a flag's);
   ``parallel-32``: with
   ``PULUMI_PARALLEL=32`` (the CLI's default is 4 per CPU); ``qps-50`` / ``qps-1000``: the kubernetes provider's
   client-side rate limit (``cluster.kubeClientSettings``, default 200 QPS, burst 400) at the provider's own
   default 50 (burst 120) or at 1000 (burst 2000);
   ``preview-parallel-diff``: the no-change preview again with ``PULUMI_PARALLEL_DIFF=true`` (the engine computes
   the providers' Diffs concurrently instead of one after another in its step generator); ``preview-no-policy``: the
   no-change preview with ``--no-policy``.
5. ``--destroy``: ``python -m kueue_cohorts.deploy destroy`` against ``kubectl delete --wait`` of kubectl's objects.

Every figure is one wall-clock run (commands start as processes, as a user runs them) with the 1-minute load
average before and after it: the machine (2 cores) is shared, so compare ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from kueue_cohorts import PROJECT_ROOT, toolchain
from kueue_cohorts.benchmarks import add_write_flag, load_average, save, utc_now
from kueue_cohorts.components.settings.stackfile import stack_path
from kueue_cohorts.deploy import engine, scratch
from kueue_cohorts.toolchain import versions

ROOT = PROJECT_ROOT
PYTHON = ROOT / ".venv" / "bin" / "python"
STACK = "bench"

#: Optional extra ``pulumi up`` runs: label -> (name prefix letter, extra environment, extra ``python -m
# kueue_cohorts.deploy``
#: arguments, extra ``kueue-cohorts:cluster`` settings). The main run's objects use the letter p, kubectl's k.
VARIANTS: dict[str, tuple[str, dict[str, str], list[str], dict[str, Any]]] = {
    "every-step": ("e", {"PULUMI_SKIP_CHECKPOINTS": "false"}, [], {}),
    "no-policy": ("n", {}, ["--no-policy"], {}),
    "two-pass": ("f", {}, [], {}),
    "parallel-32": ("q", {"PULUMI_PARALLEL": "32"}, [], {}),
    "qps-50": ("r", {}, [], {"kubeClientSettings": {"qps": 50, "burst": 120}}),
    "qps-1000": ("s", {}, [], {"kubeClientSettings": {"qps": 1000, "burst": 2000}}),
}
#: What the ``two-pass`` variant appends to the copy's __main__.py (restored after it): one object registered beside
#: the assembler, as a user could add by hand; deploy/passes.py then decides two passes.
HAND_ADDED = {"two-pass": '''
import pulumi_kubernetes as _bench_k8s

_bench_k8s.core.v1.ConfigMap("bench-hand-added", metadata={"name": "bench-hand-added", "namespace": "default"},
                             data={"added": "by hand"}, opts=pulumi.ResourceOptions(provider=provider))
'''}
#: deploy's line with the pass count it chose (deploy/passes.py ``Decision.lines``) and the dry run's seconds.
PASSES_LINE = re.compile(r"deploy: up in (one pass|two passes): .*?(?:\(dry run ([0-9.]+) s\))?$", re.MULTILINE)
#: Optional extra no-change previews of the main stack: label -> (extra environment, extra ``python -m
# kueue_cohorts.deploy``
#: arguments).
PREVIEW_VARIANTS: dict[str, tuple[dict[str, str], list[str]]] = {
    "preview-parallel-diff": ({"PULUMI_PARALLEL_DIFF": "true"}, []),
    "preview-no-policy": ({}, ["--no-policy"]),
}
#: gRPC methods that stream or wait for the whole run (their durations are not time spent on one call).
LONG_LIVED = ("RegisterResourceOutputs", "GetDeploymentInfo", "SignalAndWaitForShutdown", "Attach", "Log")
#: The duration the engine's gRPC log gives a call it did not time (Go's maximum time.Duration, in nanoseconds).
UNMEASURED = 2**63 - 1

#: The API resources of the bench stack (and Events, which the kubernetes provider watches while it awaits a
#: create), whose requests are counted from the API server's apiserver_request_total.
COUNTED = ("namespaces", "clusterqueues", "localqueues", "resourceflavors", "workloadpriorityclasses", "cohorts",
           "events")


def api_requests(kubectl_bin: Path, kubeconfig: Path) -> dict[str, float]:
    """Return the API server's request counters (``apiserver_request_total``) for the bench stack's resources,
    summed per ``VERB resource[/subresource]``. Raises RuntimeError if /metrics cannot be read."""
    proc = subprocess.run([str(kubectl_bin), "--kubeconfig", str(kubeconfig), "get", "--raw", "/metrics"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"reading /metrics: {proc.stderr.strip()[:300]}")
    counts: dict[str, float] = {}
    for line in proc.stdout.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, value = line[len("apiserver_request_total{"):].rsplit("} ", 1)
        labels = dict(part.split("=", 1) for part in labels_text.split('",') if "=" in part)
        labels = {k: v.strip('"') for k, v in labels.items()}
        if labels.get("resource") not in COUNTED:
            continue
        key = f"{labels.get('verb')} {labels['resource']}"
        key += f"/{labels['subresource']}" if labels.get("subresource") else ""
        key += " (dry run)" if labels.get("dry_run") else ""
        counts[key] = counts.get(key, 0) + float(value)
    return counts


def request_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, int]:
    """Return ``after - before`` per counter (counters that did not move left out), largest first."""
    delta = {k: int(v - before.get(k, 0)) for k, v in after.items() if v - before.get(k, 0) > 0}
    return dict(sorted(delta.items(), key=lambda kv: -kv[1]))


def grpc_breakdown(log: Path) -> dict[str, dict[str, float]]:
    """Return ``{method: {"calls": n, "s": seconds}}`` (largest first) from a ``PULUMI_DEBUG_GRPC`` log (one JSON
    object per line; ``duration`` in nanoseconds on completed calls). Calls that last the whole run
    (:data:`LONG_LIVED`) and calls logged without a measured duration (:data:`UNMEASURED`: the engine logs
    ``RegisterResource`` so) are left out."""
    totals: dict[str, list[float]] = {}
    for line in log.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("progress") == "request_started" or "method" not in entry:
            continue
        method = entry["method"].rsplit("/", 1)[-1]
        nanos = entry.get("duration", 0)
        if method in LONG_LIVED or nanos >= UNMEASURED:
            continue
        total = totals.setdefault(method, [0, 0.0])
        total[0] += 1
        total[1] += nanos / 1e9
    ordered = sorted(totals.items(), key=lambda kv: -kv[1][1])
    return {m: {"calls": int(n), "s": round(t, 2)} for m, (n, t) in ordered}


def shared_pool_stack(tenants: int, prefix: str) -> dict[str, Any]:
    """Return a stack document (``{"config": {...}}``) targeting the sandbox: one symmetric cohort of ``tenants``
    tenants named ``<prefix>t0000``..., each with a floor of 1 cpu, 4Gi and 1 nvidia.com/gpu; one node pool holds
    exactly the sum. Every object name starts with ``prefix``."""
    floor = {"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": "1"}
    return {"config": {
        "kueue-cohorts:cluster": {"mode": "sandbox"},
        "kueue-cohorts:nodePools": [{"name": f"{prefix}gpu", "count": 1, "capacity": {
            "cpu": str(tenants), "memory": f"{4 * tenants}Gi", "nvidia.com/gpu": str(tenants)}}],
        "kueue-cohorts:resourceFlavor": {"name": f"{prefix}flavor"},
        "kueue-cohorts:sharedPool": {
            "cohort": f"{prefix}pool",
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            "tenants": [{"name": f"{prefix}t{i:04d}", "floor": floor} for i in range(tenants)],
        },
    }}


def _label(pid: str, marker: bytes) -> str | None:
    """Name a process for the CPU breakdown: the executable's name for processes of this run (``marker``, the
    run's scratch directory, in their environment or command line; the policy pack's Python told apart), else
    "other processes" (the rest of the shared machine). None if it is gone."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    if marker not in environ and not any(marker in a for a in argv):
        return "other processes"
    name = Path(argv[0].decode(errors="replace")).name if argv and argv[0] else ""
    if name.startswith("python"):
        return "python (policy pack)" if b"pulumi.policy" in b" ".join(argv) else "python (deploy, program)"
    return name or None


class CpuSampler(threading.Thread):
    """Samples the CPU time (user + system) of every process every ``period`` seconds while running.

    ``stop()`` returns CPU seconds per process label (see ``_label``; ``marker`` tells this run's processes) used
    between ``start()`` and ``stop()``: approximate (a process's last ``period`` before it exits, and processes
    living less than ``period``, are missed), enough to see which process the time goes to.
    """

    def __init__(self, marker: str, period: float = 0.25):
        super().__init__(daemon=True)
        self.marker = marker.encode()
        self.period, self.done = period, threading.Event()
        self.first: dict[str, int] = {}
        self.last: dict[str, int] = {}
        self.labels: dict[str, str | None] = {}
        self.tick = os.sysconf("SC_CLK_TCK")

    def _sample(self) -> None:
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                fields = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
            if entry.name not in self.labels:
                self.labels[entry.name] = _label(entry.name, self.marker)
            self.first.setdefault(entry.name, ticks)
            self.last[entry.name] = ticks

    def run(self) -> None:
        """Sample until stopped."""
        self._sample()
        while not self.done.wait(self.period):
            self._sample()

    def stop(self) -> dict[str, float]:
        """Stop sampling; return CPU seconds per label, largest first (labels under 0.05 s left out)."""
        self.done.set()
        self.join()
        self._sample()
        used: dict[str, float] = {}
        for pid, ticks in self.last.items():
            label = self.labels.get(pid)
            if label and ticks > self.first[pid]:
                used[label] = used.get(label, 0) + (ticks - self.first[pid]) / self.tick
        return {k: round(v, 2) for k, v in sorted(used.items(), key=lambda kv: -kv[1]) if v >= 0.05}


class Run:
    """One size's scratch space: the project copy, its file backend, the sandbox, logs; runs timed commands."""

    def __init__(self, work: Path, tenants: int, kubectl_bin: Path | None = None):
        self.work, self.tenants, self.kubectl = work, tenants, kubectl_bin
        self.project = scratch.clone(work / "project", venv=ROOT / ".venv")
        self.logs = work / "logs"
        self.logs.mkdir()
        self.sandbox_dir = work / "sandbox"
        (work / "state").mkdir()
        self.env = {**os.environ, "KUEUE_COHORTS_SANDBOX_DIR": str(self.sandbox_dir),
                    "PULUMI_BACKEND_URL": f"file://{work / 'state'}", "PYTHONUNBUFFERED": "1"}
        self.env.pop("PULUMI_SKIP_CHECKPOINTS", None)  # the benchmark measures deploy's own settings

    def timed(self, label: str, argv: list[str], env: dict[str, str] | None = None,
              ok_codes: tuple[int, ...] = (0,), count: bool = True) -> dict[str, Any]:
        """Run ``argv`` in the project copy (output to ``logs/<label>.log``); return seconds, load averages,
        exit code, CPU seconds per process (every process on the machine, see CpuSampler) and, with ``count``,
        the API requests on the bench stack's resources (``api_requests``: everyone's, Kueue's included).
        Raises RuntimeError with the log's tail when the exit code is not in ``ok_codes``."""
        log = self.logs / f"{label}.log"
        kubectl = self.kubectl if count else None  # counted only with a kubectl
        requests_before = api_requests(kubectl, self.sandbox_dir / "kubeconfig") if kubectl is not None else {}
        load_before = load_average()
        sampler = CpuSampler(str(self.work))
        sampler.start()
        start = time.monotonic()
        with log.open("w") as out:
            code = subprocess.run(argv, cwd=self.project, env={**self.env, **(env or {})}, stdout=out,
                                  stderr=subprocess.STDOUT).returncode
        seconds = time.monotonic() - start
        cpu = sampler.stop()
        if code not in ok_codes:
            tail = "\n".join(log.read_text().splitlines()[-25:])
            raise RuntimeError(f"{label}: `{' '.join(map(str, argv))}` exited {code}:\n{tail}")
        figure = {"s": round(seconds, 2), "load1_before": load_before[0], "load1_after": load_average()[0],
                  "exit": code, "cpu_s": cpu}
        if kubectl is not None:
            figure["api_requests"] = request_delta(requests_before,
                                                   api_requests(kubectl, self.sandbox_dir / "kubeconfig"))
        return figure

    def deploy(self, label: str, command: str, prefix: str, env: dict[str, str] | None = None,
               extra: list[str] | None = None, cluster: dict[str, Any] | None = None) -> dict[str, Any]:
        """Write the bench stack with names ``prefix...`` (``cluster`` merged into ``kueue-cohorts:cluster``) and
        time ``python -m kueue_cohorts.deploy <command> --stack bench``."""
        stack_file = stack_path(STACK, self.project)
        doc = yaml.safe_load(stack_file.read_text()) if stack_file.is_file() else {}
        doc.update(shared_pool_stack(self.tenants, prefix))  # keeps the encryptionsalt the first run wrote
        doc["config"]["kueue-cohorts:cluster"].update(cluster or {})
        stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
        figure = self.timed(label, [str(PYTHON), "-m", "kueue_cohorts.deploy", command, "--stack", STACK,
                                    *(extra or [])], env)
        if command == "up":
            figure.update(passes_chosen((self.logs / f"{label}.log").read_text()))
        return figure

    def deploy_with(self, added: str, label: str, prefix: str, **kwargs: Any) -> dict[str, Any]:
        """``deploy`` of ``up`` with ``added`` appended to the copy's __main__.py for this run only."""
        program = self.project / "__main__.py"
        original = program.read_text()
        program.write_text(original + added)
        try:
            return self.deploy(label, "up", prefix, **kwargs)
        finally:
            program.write_text(original)

    def state_resources(self) -> list[dict[str, Any]]:
        """Return the resources of the bench stack's state (``pulumi stack export`` through deploy.engine)."""

        stack = engine.open_stack(STACK, work_dir=self.project, backend=self.env["PULUMI_BACKEND_URL"],
                                  create=False)
        resources: list[dict[str, Any]] = (stack.export_stack().deployment or {}).get("resources") or []
        return resources

    def fresh_stack(self) -> None:
        """Remove the bench stack from the backend (the cluster keeps its objects), so the next up starts empty."""

        stack = engine.open_stack(STACK, work_dir=self.project, backend=self.env["PULUMI_BACKEND_URL"],
                                  create=False)
        stack.workspace.remove_stack(STACK, force=True)


def passes_chosen(log: str) -> dict[str, Any]:
    """``{"passes": 1 or 2, "dry_run_s": seconds}`` from the log of ``python -m kueue_cohorts.deploy up``
    (``PASSES_LINE``; the
    dry run's seconds left out when no dry run ran); ``{}`` when the log has no such line."""
    found = PASSES_LINE.search(log)
    if found is None:
        return {}
    out: dict[str, Any] = {"passes": 1 if found.group(1) == "one pass" else 2}
    if found.group(2):
        out["dry_run_s"] = float(found.group(2))
    return out


def manifests_from_state(resources: list[dict[str, Any]], old: str, new: str) -> list[dict[str, Any]]:
    """Return the objects Pulumi applied (``inputs`` of every ``kubernetes:`` resource) with every occurrence of
    the name prefix ``old`` replaced by ``new``, ordered Namespaces, other cluster-scoped objects, namespaced."""
    objects = []
    for res in resources:
        if res["type"].startswith("kubernetes:") and "inputs" in res:
            obj = {k: v for k, v in res["inputs"].items() if not k.startswith("__")}
            objects.append(json.loads(json.dumps(obj).replace(old, new)))
    return sorted(objects, key=lambda o: (o["kind"] != "Namespace", "namespace" in o["metadata"]))


def kubectl() -> Path:
    """Return the kubectl to compare with: the toolchain's, built from the same ``k8s.io/kubernetes`` module and
    version as the sandbox's kube-apiserver (``[binaries.kubernetes]``), never whatever ``kubectl`` is on PATH.
    Raises toolchain.ToolchainError when it is not built (``python -m kueue_cohorts.toolchain ensure kubectl``)."""
    return toolchain.binary("kubectl")


def bench_size(tenants: int, variants: list[str], work: Path, kubectl_bin: Path,
               destroy: bool = False) -> dict[str, Any]:
    """Measure one size in a fresh sandbox under ``work``; return its row (seconds, ratios, loads, counts).
    ``destroy``: also time ``python -m kueue_cohorts.deploy destroy`` of the last stack against ``kubectl delete`` of
    kubectl's
    objects (both wait until the objects are gone; a Namespace goes once its contents are deleted)."""
    run = Run(work, tenants, kubectl_bin)
    sandbox_up = run.timed("sandbox-up", [str(PYTHON), "-m", "kueue_cohorts.sandbox", "up", "--stack", "dev"],
                           count=False)
    try:
        kubeconfig = run.sandbox_dir / "kubeconfig"
        pul, kub = f"b{tenants}p-", f"b{tenants}k-"
        row: dict[str, Any] = {"tenants": tenants, "sandbox_up_s": sandbox_up["s"]}
        row["kubectl_version"] = subprocess.run([str(kubectl_bin), "--kubeconfig", str(kubeconfig), "version"],
                                                capture_output=True, text=True).stdout.split("\n")[:3]
        row["pulumi_up"] = run.deploy("pulumi-up", "up", pul)
        row["pulumi_preview_no_change"] = run.deploy("pulumi-preview", "preview", pul, extra=["--expect-no-changes"])
        grpc_log = run.logs / "pulumi-preview-grpc.jsonl"
        traced = run.deploy("pulumi-preview-traced", "preview", pul, env={"PULUMI_DEBUG_GRPC": str(grpc_log)},
                            extra=["--expect-no-changes"])
        row["pulumi_preview_breakdown"] = {"s": traced["s"], "load1_before": traced["load1_before"],
                                           "grpc_s": grpc_breakdown(grpc_log)}
        for variant in [v for v in variants if v in PREVIEW_VARIANTS]:
            env, extra = PREVIEW_VARIANTS[variant]
            row[f"pulumi_{variant.replace('-', '_')}"] = run.deploy(f"pulumi-{variant}", "preview", pul, env=env,
                                                                    extra=["--expect-no-changes", *extra])
        resources = run.state_resources()
        row["resources"] = len(resources)
        objects = manifests_from_state(resources, pul, kub)
        row["objects"] = len(objects)
        manifest = work / "manifests.yaml"
        manifest.write_text(yaml.safe_dump_all(objects, sort_keys=False))
        base = [str(kubectl_bin), "--kubeconfig", str(kubeconfig)]
        row["kubectl_apply"] = run.timed("kubectl-apply", [*base, "apply", "--server-side", "-f", str(manifest)])
        # kubectl diff: exit 0 = no differences, 1 = differences (recorded), >1 = error
        row["kubectl_diff"] = run.timed("kubectl-diff", [*base, "diff", "--server-side", "-f", str(manifest)],
                                        ok_codes=(0, 1))
        for variant in [v for v in variants if v in VARIANTS]:
            letter, env, extra, cluster = VARIANTS[variant]
            run.fresh_stack()
            kwargs: dict[str, Any] = {"env": env, "extra": extra, "cluster": cluster}
            row[f"pulumi_up_{variant}"] = (
                run.deploy_with(HAND_ADDED[variant], f"pulumi-up-{variant}", f"b{tenants}{letter}-", **kwargs)
                if variant in HAND_ADDED else run.deploy(f"pulumi-up-{variant}", "up", f"b{tenants}{letter}-",
                                                         **kwargs))
        if destroy:
            row["pulumi_destroy"] = run.timed("pulumi-destroy", [str(PYTHON), "-m", "kueue_cohorts.deploy", "destroy",
                                                                 "--stack",
                                                                 STACK])
            row["kubectl_delete"] = run.timed("kubectl-delete", [*base, "delete", "--wait", "-f", str(manifest)])
            row["destroy_vs_kubectl"] = round(row["pulumi_destroy"]["s"] / row["kubectl_delete"]["s"], 2)
        row["up_vs_kubectl"] = round(row["pulumi_up"]["s"] / row["kubectl_apply"]["s"], 2)
        row["preview_vs_kubectl_diff"] = round(row["pulumi_preview_no_change"]["s"] / row["kubectl_diff"]["s"], 2)
        return row
    finally:
        run.timed("sandbox-down", [str(PYTHON), "-m", "kueue_cohorts.sandbox", "down", "--purge"], count=False)


def growth(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return, for each pair of measured sizes (smaller, larger), how much each figure grew and how that compares
    with linear growth in the number of objects (``vs_linear`` 1.0 = linear, above = superlinear)."""
    keys = (
        [
            "pulumi_up",
            "pulumi_preview_no_change",
            "kubectl_apply",
            "kubectl_diff",
            "pulumi_destroy",
            "kubectl_delete",
            *[k for k in rows[0] if k.startswith(("pulumi_up_", "pulumi_preview_")) and "s" in rows[0][k]
              and k != "pulumi_preview_breakdown"],
        ]
        if rows
        else []
    )
    out = []
    for i, a in enumerate(rows):
        for b in rows[i + 1:]:
            objects = b["objects"] / a["objects"]
            entry: dict[str, Any] = {"from": a["tenants"], "to": b["tenants"], "objects_x": round(objects, 2)}
            for key in keys:
                if key in a and key in b:
                    x = b[key]["s"] / a[key]["s"]
                    entry[key] = {"x": round(x, 2), "vs_linear": round(x / objects, 2)}
            out.append(entry)
    return out


def _print_row(row: dict[str, Any], variants: list[str]) -> None:
    def fig(key: str) -> str:
        f = row[key]
        passes = f" {f['passes']} pass(es), dry run {f.get('dry_run_s', 0):.1f} s" if "passes" in f else ""
        return f"{f['s']:8.1f} s (load {f['load1_before']:.1f}->{f['load1_after']:.1f}){passes}"

    print(f"{row['tenants']:5d} tenants, {row['resources']} resources, {row['objects']} objects")
    print(f"   pulumi up (python -m kueue_cohorts.deploy, policy on)  {fig('pulumi_up')}")
    print(f"   kubectl apply --server-side               {fig('kubectl_apply')}   ratio {row['up_vs_kubectl']:.2f}")
    print(f"   pulumi preview (no change)                {fig('pulumi_preview_no_change')}")
    print(f"   kubectl diff --server-side                {fig('kubectl_diff')}   "
          f"ratio {row['preview_vs_kubectl_diff']:.2f}")
    for variant in variants:
        if variant in PREVIEW_VARIANTS:
            key = "pulumi_" + variant.replace("-", "_")
            print(f"   pulumi {variant}{' ' * (34 - len(variant))}{fig(key)}")
        else:
            print(f"   pulumi up [{variant}]{' ' * (29 - len(variant))}{fig(f'pulumi_up_{variant}')}")
    breakdown = row.get("pulumi_preview_breakdown")
    if breakdown:
        calls = ", ".join(f"{m} {v['s']:.1f} s/{v['calls']}" for m, v in list(breakdown["grpc_s"].items())[:9])
        print(f"   where a preview's time goes (traced run {breakdown['s']:.1f} s, seconds/calls per gRPC method): "
              f"{calls}")
    if "pulumi_destroy" in row:
        print(f"   pulumi destroy                            {fig('pulumi_destroy')}")
        print(f"   kubectl delete --wait                     {fig('kubectl_delete')}   "
              f"ratio {row['destroy_vs_kubectl']:.2f}")


def main(argv: list[str] | None = None) -> int:
    """Measure every ``--tenants`` size, print the table and the growth; with ``--write`` record them."""
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m kueue_cohorts.benchmarks.engine",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, nargs="+", default=[100, 500, 1000],
                        help="sizes to measure (default 100 500 1000)")
    parser.add_argument(
        "--variant",
        nargs="*",
        choices=sorted([*VARIANTS, *PREVIEW_VARIANTS]),
        default=[],
        help="extra pulumi up runs per size, under fresh names: every-step "
        "(PULUMI_SKIP_CHECKPOINTS=false), no-policy (--no-policy), two-pass (a ConfigMap added to "
        "__main__.py by hand: deploy previews first), "
        "parallel-32 (PULUMI_PARALLEL=32), "
        "qps-200 (the kubernetes provider's client at 200 QPS, burst 400; its default is 50/120); no-change "
        "previews: preview-parallel-diff (PULUMI_PARALLEL_DIFF=true), preview-no-policy (--no-policy)",
    )
    parser.add_argument("--variant-max-tenants", type=int, default=None, metavar="N",
                        help="run the variants only for sizes up to N (every-step grows quadratically)")
    parser.add_argument("--destroy", action="store_true",
                        help="also time `python -m kueue_cohorts.deploy destroy` against `kubectl delete --wait` of "
                             "the same objects")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directories (logs, manifests)")
    add_write_flag(parser)
    args = parser.parse_args(argv)
    try:
        toolchain.ensure(["pulumi", "pulumi-resource-kubernetes", "etcd", "kube-apiserver", "kubectl", "kwok",
                          "kueue", "jobset-controller-manager", "trainer-controller-manager"])
        kubectl_bin = kubectl()
    except toolchain.ToolchainError as exc:
        print(f"kueue_cohorts.benchmarks.engine: {exc}", file=sys.stderr)
        return 2
    kubectl_version = subprocess.run([str(kubectl_bin), "version", "--client"], capture_output=True,
                                     text=True).stdout.splitlines()[:1]
    started, load_start = utc_now(), load_average()
    rows: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    command = "python -m kueue_cohorts.benchmarks.engine --tenants " + " ".join(map(str, args.tenants))
    if args.variant:
        command += " --variant " + " ".join(args.variant)
    if args.variant_max_tenants is not None:
        command += f" --variant-max-tenants {args.variant_max_tenants}"
    if args.destroy:
        command += " --destroy"

    def record(final: bool) -> None:
        """Save the sizes measured so far (after each size, so a long run that is stopped keeps them)."""
        save("engine", {
            "benchmark": "engine",
            "what": "pulumi up (python -m kueue_cohorts.deploy, policy pack on) vs kubectl apply --server-side of the "
                    "same "
                    "objects, no-change preview vs kubectl diff --server-side, one fresh sandbox API server per size",
            "command": command,
            "complete": final,
            "measured_at": started,
            "machine": {"cpus": os.cpu_count(), "loadavg_1_5_15_start": load_start,
                        "loadavg_1_5_15_end": load_average(), "note": "shared machine; one wall-clock run per figure"},
            "pulumi": versions.load().entry_for("pulumi").version,
            "kubectl": {"path": str(kubectl_bin), "version": kubectl_version},
            "rows": rows,
            "failed": failed,
            "growth": growth(rows),
        }, args.write and bool(rows))

    for n in args.tenants:
        work = Path(tempfile.mkdtemp(prefix=f"bench-engine-{n}-"))
        try:
            variants = args.variant if args.variant_max_tenants is None or n <= args.variant_max_tenants else []
            row = bench_size(n, variants, work, kubectl_bin, args.destroy)
        except Exception as exc:  # noqa: BLE001 - report the size that failed, measure the others
            print(f"{n} tenants failed: {exc}", file=sys.stderr, flush=True)
            failed.append({"tenants": n, "error": str(exc)[-2000:]})
            continue
        finally:
            if args.keep:
                print(f"kept {work}")
            else:
                shutil.rmtree(work, ignore_errors=True)
        rows.append(row)
        _print_row(row, variants)
        print("row " + json.dumps(row), flush=True)
        if n != args.tenants[-1]:
            record(final=False)
    for g in growth(rows):
        parts = [f"{k} x{v['x']} ({v['vs_linear']} of linear)" for k, v in g.items() if isinstance(v, dict)]
        print(f"{g['from']} -> {g['to']} tenants ({g['objects_x']}x objects): " + ", ".join(parts))
    record(final=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
