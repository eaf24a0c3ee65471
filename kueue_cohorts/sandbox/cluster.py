"""``up``, ``down`` and ``status`` of the sandbox: start the components in order, wait for health, stop by pid.

Order: etcd and kube-apiserver started together → kube-controller-manager, kube-scheduler, kwok → CRDs (Kueue
with conversion webhooks, JobSet, Kubeflow Trainer, KServe), only those whose content changed, applied concurrently
→ the Kueue, JobSet and Trainer managers (at once when no CRD changed) while the webhook configurations and the
fake nodes of the stack's nodePools are applied → KServe's ConfigMap and its manager (RawDeployment mode,
:mod:`sandbox.kserve`) → every component healthy, the nodes Ready, Kueue's webhooks reached by the apiserver,
KServe's ClusterServingRuntimes applied through its webhook. A failed step stops what was started and quotes the
end of the component's log. Ports, certificates and etcd data are kept in the state directory across
``down``/``up``, so the kubeconfig stays the same and a Pulumi stack applied before ``down`` is still there after
``up``.

The Trainer's manager and its webhook configurations follow the stack's ``multiKueue.managerTrainer``
(:meth:`Sandbox.manager_trainer`): with CRDsOnly the manager sandbox serves the Trainer's CRDs only, and ``up`` of a
running sandbox stops or starts the Trainer when the stack changed it (:meth:`Sandbox._reconcile_trainer`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections import deque
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import yaml
from kubernetes import config as kconfig
from kubernetes.client import ApiClient, ApiException

from kueue_cohorts import toolchain
from kueue_cohorts.components.checks.validation import load_stack_file
from kueue_cohorts.components.model.alerts import rules_file
from kueue_cohorts.components.settings import KueueMetrics, ManagerTrainer, NodePool, Settings
from kueue_cohorts.sandbox import certs as certs_mod
from kueue_cohorts.sandbox import (
    controlplane,
    files,
    jobcontrollers,
    kserve,
    kubeconfig,
    kueue,
    kwok,
    process,
    realnode,
)
from kueue_cohorts.sandbox import prometheus as prom
from kueue_cohorts.sandbox.apply import (
    CLUSTER_SCOPED,
    CRDS,
    SandboxError,
    annotations_of,
    apply_cluster_scoped,
    delete,
    established,
    get_json,
    load_documents,
    names_of,
    nodes_ready,
    request_json,
    served,
    wait_until,
    watch_until,
)
from kueue_cohorts.sandbox.health import Probe
from kueue_cohorts.sandbox.paths import SandboxPaths
from kueue_cohorts.sandbox.ports import LOOPBACK, allocate
from kueue_cohorts.sandbox.state import State, locked
from kueue_cohorts.toolchain import versions as tv

#: Components in start order (stopped in reverse).
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kueue",
              "jobset-controller-manager", "trainer-controller-manager", "kserve-manager")
#: Toolchain executables the sandbox needs (one per component).
BINARIES = COMPONENTS
#: versions.toml [crds] entries installed, in order (JobSet before Trainer: the TrainJob integration owns JobSets;
#: kserve-controller: the KServe kinds its manager watches besides InferenceService).
CRD_SOURCES = ("kueue", "jobset", "trainer", "kserve", "kserve-controller")
#: What a MultiKueue worker sandbox runs: no KServe (InferenceServices serve where the stack targets, the manager).
WORKER_COMPONENTS = tuple(c for c in COMPONENTS if c != "kserve-manager")
WORKER_CRD_SOURCES = ("kueue", "jobset", "trainer")
#: The Kubeflow Trainer's controller manager: not run on a manager whose stack says ``multiKueue.managerTrainer:
#: CRDsOnly`` (:meth:`Sandbox.manager_trainer`).
TRAINER = "trainer-controller-manager"
#: Annotation holding the SHA-256 of the CRD as the sandbox applied it; an unchanged CRD is not applied again.
CRD_HASH_ANNOTATION = "kueue-cohorts.sandbox/sha256"


def probes(paths: SandboxPaths, ports: Mapping[str, int]) -> dict[str, Probe]:
    """Return the health probe of every component. Every probe over TLS presents a client certificate, since
    neither etcd (``--client-cert-auth``) nor the apiserver (``--anonymous-auth=false``) answers anonymous
    requests: etcd ``/health`` with the apiserver's etcd client pair, verified with etcd's CA; apiserver ``/readyz``
    verified with our CA and the admin pair; controller-manager and scheduler ``/healthz`` on their self-signed
    ports with the admin pair (their delegated authentication trusts our CA); kwok ``/healthz``; Kueue's, JobSet's,
    the Trainer's and KServe's ``/readyz``, which turn OK once their webhook servers serve (plain HTTP on loopback)."""
    c = certs_mod.Certificates(paths.pki)
    admin = (c.admin_crt, c.admin_key)
    found = {
        "etcd": Probe(f"{controlplane.etcd_url(ports)}/health", ca=c.etcd_ca_crt,
                      client=(c.etcd_client_crt, c.etcd_client_key)),
        "kube-apiserver": Probe(f"https://{LOOPBACK}:{ports['kube-apiserver']}/readyz", ca=c.ca_crt, client=admin),
        "kube-controller-manager": Probe(f"https://{LOOPBACK}:{ports['kube-controller-manager']}/healthz",
                                         client=admin),
        "kube-scheduler": Probe(f"https://{LOOPBACK}:{ports['kube-scheduler']}/healthz", client=admin),
        "kwok": Probe(f"http://{LOOPBACK}:{ports['kwok']}/healthz"),
        "kueue": Probe(f"http://{LOOPBACK}:{ports['kueue-health']}/readyz"),
        "jobset-controller-manager": Probe(f"http://{LOOPBACK}:{ports['jobset-health']}/readyz"),
        "trainer-controller-manager": Probe(f"http://{LOOPBACK}:{ports['trainer-health']}/readyz"),
    }
    if "kserve-health" in ports:  # absent from the state of a sandbox started before KServe ran in it
        found["kserve-manager"] = Probe(f"http://{LOOPBACK}:{ports['kserve-health']}/readyz")
    if prom.NAME in ports:
        found[prom.NAME] = Probe(f"http://{LOOPBACK}:{ports[prom.NAME]}/-/ready")
    return found


@dataclass
class UpReport:
    """What ``up`` did: ``already_running`` (nothing started), ``seconds`` per step and in total, ``kubeconfig``."""

    kubeconfig: Path
    already_running: bool = False
    seconds: dict[str, float] = field(default_factory=dict)


def _tail(path: str | Path, lines: int = 25) -> str:
    try:
        with open(path, errors="replace") as fh:
            return "".join(deque(fh, maxlen=lines))
    except OSError:
        return "(no log)"


class Sandbox:
    """One sandbox, kept in ``paths`` (default: :meth:`SandboxPaths.default`). ``log`` receives progress lines.

    ``worker``: the name of a MultiKueue worker of the stack (``multiKueue.workers[].name``) when this sandbox is
    that worker's cluster (``python -m kueue_cohorts.sandbox up --workers N``, state under ``<state
    dir>/workers/<name>``): it runs
    :data:`WORKER_COMPONENTS` (no KServe), takes its nodes from the worker's ``nodePools`` (default the stack's), and
    writes the kubeconfig the manager's Kueue uses there (``multikueue.kubeconfig``, the worker identity's client
    certificate, :func:`sandbox.certs.worker_identity`)."""

    def __init__(self, paths: SandboxPaths | None = None, log: Callable[[str], None] | None = None,
                 worker: str | None = None):
        self.paths = paths or SandboxPaths.default()
        self.worker = worker
        self.components = WORKER_COMPONENTS if worker else COMPONENTS
        self._crd_sources = WORKER_CRD_SOURCES if worker else CRD_SOURCES
        self._spawned_at: dict[str, float] = {}
        prefix = f"[sandbox {worker}]" if worker else "[sandbox]"
        self._log = log or (lambda msg: print(f"{prefix} {msg}", file=sys.stderr, flush=True))

    # ----- inspection ------------------------------------------------------------------------------------------

    def state(self) -> State:
        """Return the recorded state (empty when the sandbox never ran)."""
        return State.load(self.paths.state_file)

    def health(self) -> dict[str, tuple[bool, bool, str]]:
        """Return ``{component: (process alive, healthy, detail)}`` for every component this sandbox runs
        (:data:`COMPONENTS`, or :data:`WORKER_COMPONENTS` for a worker), and for Prometheus when
        ``up --with-prometheus`` started it. The Trainer's controller of a sandbox recorded as CRDsOnly
        (:attr:`State.manager_trainer`) is ``(False, True, "not run: ...")`` while it is indeed not running: healthy
        by being absent."""
        st = self.state()
        result = {}
        checks = probes(self.paths, st.ports) if st.ports else {}
        for name in tuple(self.components) + ((prom.NAME,) if prom.NAME in st.processes else ()):
            rec = st.processes.get(name)
            running = bool(rec and process.alive(rec))
            if name == TRAINER and st.manager_trainer == ManagerTrainer.CRDS_ONLY and not running:
                result[name] = (False, True, "not run: the stack's multiKueue.managerTrainer is CRDsOnly")
                continue
            ok, detail = checks[name].check() if (running and name in checks) else (False, "not running")
            result[name] = (running, ok, detail)
        return result

    def running(self) -> bool:
        """Return True when every component runs and answers its health probe."""
        return all(ok for _, ok, _ in self.health().values())

    # ----- up --------------------------------------------------------------------------------------------------

    def up(self, stack_path: Path, timeout: float = 180.0, kueue_delay: float = 0.0,
           with_prometheus: bool = False, real_node: bool = False) -> UpReport:
        """Bring the sandbox up with the nodes of ``stack_path``'s nodePools; idempotent.

        When every component already runs and is healthy, only the nodes and the Trainer
        (:meth:`_reconcile_trainer`) are reconciled with the stack. Otherwise
        whatever is left of a previous run is stopped and everything starts again (same ports when free, same
        certificates, same etcd data). ``kueue_delay`` (seconds, default 0) starts the Kueue manager that much later
        and returns without waiting for it (see :meth:`_start`). ``with_prometheus`` also starts Prometheus
        (:meth:`_start_prometheus`), on a running sandbox too; ``real_node`` also starts the real node
        (:meth:`_start_real_node`, building its binaries on first use), on a running sandbox too. Raises
        SandboxError (step, cause and log tail) or toolchain.ToolchainError.
        """
        report = UpReport(kubeconfig=self.paths.kubeconfig)
        t0 = time.monotonic()
        with locked(self.paths.lock):
            if self.running():
                st = self.state()
                self._log("already running; reconciling nodes and the Trainer with the stack")
                settings = load_stack_file(stack_path)
                self._reconcile_nodes(stack_path, st, settings=settings)
                self._reconcile_trainer(settings, st, timeout)
                self._write_worker_identity(settings, st)
                if with_prometheus:
                    self._start_prometheus(st, settings, stack_path, timeout)
                if real_node:
                    t = time.monotonic()
                    self._start_real_node(st, settings, timeout)
                    self._step(report, "real-node", t)
                report.already_running = True
                report.seconds["total"] = time.monotonic() - t0
                return report
            self._stop_all()
            try:
                self._start(stack_path, report, timeout, kueue_delay)
                if with_prometheus:
                    t = time.monotonic()
                    self._start_prometheus(self.state(), load_stack_file(stack_path), stack_path, timeout)
                    self._step(report, "prometheus", t)
                if real_node:
                    t = time.monotonic()
                    self._start_real_node(self.state(), load_stack_file(stack_path), timeout)
                    self._step(report, "real-node", t)
            except BaseException:
                self._log("start failed; stopping what was started")
                self._stop_all()
                raise
        report.seconds["total"] = time.monotonic() - t0
        return report

    def _step(self, report: UpReport, name: str, t0: float) -> None:
        report.seconds[name] = round(time.monotonic() - t0, 3)
        self._log(f"{name}: {report.seconds[name]:.1f} s")

    def _spawn(self, st: State, name: str, argv: list[str], env: Mapping[str, str] | None = None) -> None:
        self._spawned_at[name] = time.monotonic()
        rec = process.spawn(name, argv, self.paths.log(name), cwd=self.paths.run / name, env=env)
        st.processes[name] = rec
        st.save(self.paths.state_file)

    def _wait_healthy(self, st: State, name: str, timeout: float) -> None:
        probe = probes(self.paths, st.ports)[name]
        rec = st.processes[name]

        def check() -> bool:
            if not process.alive(rec):
                raise SandboxError(f"{name} exited")
            exits = process.exits_since_start(Path(rec.log))
            if exits:  # a restarting manager that exits before it is healthy would crash-loop: report it now
                raise SandboxError(f"{name} exited before it was healthy ({exits[0].split(' ', 2)[2]})")
            return probe.check()[0]

        try:
            wait_until(check, timeout, f"{name} at {probe.url}", interval=0.1)
        except SandboxError as exc:
            raise SandboxError(f"{exc}\n--- last lines of {rec.log} ---\n{_tail(rec.log)}") from None
        if name in self._spawned_at:
            self._log(f"{name} healthy {time.monotonic() - self._spawned_at.pop(name):.1f} s after its start")

    def _start(self, stack_path: Path, report: UpReport, timeout: float, kueue_delay: float = 0.0) -> None:
        """Start every component; the phases (each recorded in ``report.seconds``) overlap where the dependencies
        allow:

        * ``toolchain``: the settings, the binaries and the module directories;
        * ``certificates``: state directories (0700), certificates, kubeconfig;
        * ``etcd+kube-apiserver``: etcd and the apiserver start together (the apiserver retries until etcd
          serves), until etcd's ``/health`` and the apiserver's ``/readyz``; meanwhile the objects of the next
          phase are prepared;
        * ``crds+webhooks``: the controller-manager and the scheduler start; the node Leases of a previous kwok are
          released and kwok starts; CRDs whose content changed are applied concurrently and waited for; when none
          changed (a warm start) the Kueue, JobSet and Trainer managers start right away, otherwise right after
          the CRDs are served; the webhook configurations, the StorageClass and the nodes are applied meanwhile;
        * ``components``: every component's health, the nodes Ready and the apiserver reaching Kueue's webhooks.

        ``kueue_delay`` > 0 starts the Kueue manager that many seconds late (a test of clients that must wait for
        Kueue's webhooks): ``up`` then neither waits for it nor for its webhooks.
        """

        t = time.monotonic()
        settings = load_stack_file(stack_path)
        bins = toolchain.ensure(list(BINARIES))
        pins = tv.load()
        module = {b: toolchain.module_dir(pins.entry_for(b).module, pins.entry_for(b).module_version)
                  for b in ("kueue", "jobset-controller-manager", "trainer-controller-manager", "kwok",
                            "kserve-manager")}
        crd_docs = {source: toolchain.crd_documents(source) for source in self._crd_sources}
        self._step(report, "toolchain", t)

        t = time.monotonic()
        prev = self.state()
        st = State(ports=allocate(previous=prev.ports), stack=str(stack_path),
                   versions={b: pins.entry_for(b).version for b in self.components},
                   manager_trainer=self.manager_trainer(settings))
        trainer = st.manager_trainer == ManagerTrainer.CONTROLLER
        for d in (self.paths.root, self.paths.logs, self.paths.config, self.paths.run, self.paths.etcd_data):
            files.private_dir(d)
        c = certs_mod.ensure(self.paths.pki)
        ca = c.ca_crt.read_bytes()
        server = f"https://{LOOPBACK}:{st.ports['kube-apiserver']}"
        kubeconfig.write(self.paths.kubeconfig, server, c)
        st.save(self.paths.state_file)
        self._step(report, "certificates", t)

        t = time.monotonic()
        kc = self.paths.kubeconfig
        # etcd and the apiserver start together: the apiserver's etcd client retries until etcd serves. (The
        # controller-manager and the scheduler cannot start before the apiserver serves: their delegated
        # authentication reads a ConfigMap once at start and exits when that fails.)
        self._spawn(st, "etcd", controlplane.etcd_args(bins["etcd"], self.paths.etcd_data, st.ports, c))
        self._spawn(st, "kube-apiserver", controlplane.apiserver_args(bins["kube-apiserver"], c, st.ports),
                    env={**os.environ, **controlplane.APISERVER_ENV})
        # What the next phase applies is prepared while the apiserver starts.
        crds = self._crds(crd_docs, module["kueue"], st.ports["kueue-webhook"], ca)
        others = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                  for ns in (kueue.NAMESPACE, *(() if self.worker else (kserve.NAMESPACE,)))]
        others += load_documents([module["kwok"] / kwok.STORAGE_CLASS_FILE], kind="StorageClass")
        trainer_hooks = jobcontrollers.trainer_webhooks(module[TRAINER], st.ports["trainer-webhook"], ca)
        hooks = (kueue.webhook_configurations(module["kueue"], st.ports["kueue-webhook"], ca)
                 + jobcontrollers.jobset_webhooks(module["jobset-controller-manager"], st.ports["jobset-webhook"], ca)
                 + (trainer_hooks if trainer else [])
                 + ([] if self.worker else kserve.webhook_configurations(module["kserve-manager"],
                                                                          st.ports["kserve-webhook"], ca)))
        others += hooks
        nodes = kwok.node_manifests(self._node_pools(settings))
        stages = self.paths.config / "kwok.yaml"
        stages.write_text(kwok.stage_config(module["kwok"]))
        self._wait_healthy(st, "etcd", 30)
        self._wait_healthy(st, "kube-apiserver", timeout)
        self._step(report, "etcd+kube-apiserver", t)

        t = time.monotonic()
        api = self._client()
        self._spawn(st, "kube-controller-manager", controlplane.controller_manager_args(
            bins["kube-controller-manager"], c, kc, st.ports, self.paths.run / "kube-controller-manager"))
        self._spawn(st, "kube-scheduler", controlplane.scheduler_args(
            bins["kube-scheduler"], kc, st.ports, self.paths.run / "kube-scheduler"))
        changed = self._changed_crds(api, crds)
        if not changed:
            self._start_managers(st, bins, c, kueue_delay, settings.kueue.metrics, trainer)
        if not trainer:  # left in etcd by an earlier run with the Trainer: they would refuse every TrainJob
            self._delete_webhooks(api, trainer_hooks)
        self._release_node_leases(api)
        self._spawn(st, "kwok", kwok.kwok_args(bins["kwok"], kc, stages, st.ports["kwok"]))
        self._apply_all(api, changed + others + nodes, status_kinds={"Node"})
        if changed:
            self._wait_crds_served(api, crds, timeout)
            self._start_managers(st, bins, c, kueue_delay, settings.kueue.metrics, trainer)
        if not self.worker:
            self._start_kserve(api, st, bins, c, module["kserve-manager"])
        self._log(f"{len(crds)} CRDs ({', '.join(self._crd_sources)}): {len(changed)} applied; "
                  f"{len(hooks)} webhook configurations, {len(nodes)} nodes"
                  + ("" if trainer else "; the Trainer's CRDs only (multiKueue.managerTrainer: CRDsOnly)"))
        self._step(report, "crds+webhooks", t)

        t = time.monotonic()
        waits = ["kube-controller-manager", "kube-scheduler", "kwok", "jobset-controller-manager",
                 *((TRAINER,) if trainer else ()), *(() if self.worker else ("kserve-manager",))] + \
            ([] if kueue_delay > 0 else ["kueue"])
        for name in waits:
            self._wait_healthy(st, name, timeout)
        if not self.worker:
            runtimes = kserve.serving_runtimes(module["kserve-manager"])
            wait_until(lambda: self._applied(api, runtimes), timeout,
                       "KServe's ClusterServingRuntimes applied through its webhook")
        self._reconcile_nodes(stack_path, st, settings=settings, timeout=timeout, api=api, applied=True)
        wait_until(lambda: get_json(api, "/api/v1/namespaces/default") is not None, 30, "namespace default")
        if kueue_delay > 0:
            self._log(f"the Kueue manager starts {kueue_delay:g} s late (--kueue-delay): not waiting for it")
        else:
            self._wait_webhook(api, timeout)
        self._write_worker_identity(settings, st)
        self._step(report, "components", t)

    def _node_pools(self, settings: Settings) -> list[NodePool]:
        """The node pools this sandbox builds kwok nodes from: a worker's ``multiKueue.workers[].nodePools`` (when
        the stack gives them), else the stack's ``nodePools``."""
        found = settings.multi_kueue.worker(self.worker) if self.worker and settings.multi_kueue else None
        return list(found.node_pools) if found is not None and found.node_pools else list(settings.node_pools)

    def _write_worker_identity(self, settings: Settings, st: State) -> None:
        """For a worker sandbox: write ``multikueue.kubeconfig``, the kubeconfig the manager's Kueue uses here, as
        the worker's ServiceAccount (``multiKueue.workers[].serviceAccount`` in Kueue's namespace; default
        multikueue) by client certificate (:func:`sandbox.certs.worker_identity`). Nothing for the manager."""
        if not self.worker:
            return
        found = settings.multi_kueue.worker(self.worker) if settings.multi_kueue else None
        account = found.service_account if found is not None else "multikueue"
        c = certs_mod.Certificates(self.paths.pki)
        pair = certs_mod.worker_identity(c, settings.kueue.namespace, account)
        server = f"https://{LOOPBACK}:{st.ports['kube-apiserver']}"
        kubeconfig.write_identity(self.paths.multikueue_kubeconfig, server, c.ca_crt.read_bytes(), pair,
                                  f"{self.worker}-multikueue")

    def _start_prometheus(self, st: State, settings: Settings, stack_path: Path, timeout: float) -> None:
        """Start Prometheus (:mod:`sandbox.prometheus`) unless it runs: its access to Kueue's metrics (ServiceAccount,
        ``get /metrics``, a fresh token), its configuration and the stack's alert rules (``components.model.alerts``,
        rendered again every time), its TSDB under the state directory; wait for ``/-/ready``."""
        rec = st.processes.get(prom.NAME)
        if rec is not None and process.alive(rec):
            self._log("prometheus already running")
            return
        binary = toolchain.ensure([prom.NAME])[prom.NAME]
        if prom.NAME not in st.ports:
            st.ports.update(allocate([prom.NAME], previous=st.ports))
        c = certs_mod.Certificates(self.paths.pki)
        prom.grant_and_token(self._client(), prom.token_file(self.paths))
        stack = stack_path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        rules = prom.rules_path(self.paths)
        rules.write_text(yaml.safe_dump(rules_file(settings, stack), sort_keys=False))
        config = self.paths.config / "prometheus.yml"
        config.write_text(yaml.safe_dump(prom.configuration(st.ports, c, prom.token_file(self.paths), rules),
                                         sort_keys=False))
        data = prom.data_dir(self.paths)
        files.private_dir(data.parent)
        files.private_dir(data)
        self._spawn(st, prom.NAME, prom.args(binary, config, data, st.ports[prom.NAME]))
        self._wait_healthy(st, prom.NAME, timeout)
        self._log(f"prometheus on http://{LOOPBACK}:{st.ports[prom.NAME]} (TSDB {data})")

    def real_node_paths(self) -> realnode.RealNodePaths:
        """The real node's files (``<state dir>/real-node``)."""
        return realnode.RealNodePaths(self.paths.root / "real-node")

    def _start_real_node(self, st: State, settings: Settings, timeout: float) -> None:
        """Start the real node (:mod:`sandbox.realnode`) unless its kubelet runs: build its binaries if missing
        (``toolchain.group("real-node")``), write containerd's, the CNI's and the kubelet's configuration and the
        kubelet's node identity (a client certificate ``system:node:<name>`` of the sandbox CA, bound to the
        ``system:node`` ClusterRole), start containerd, import the pause and host-python images, start the kubelet,
        wait for the node to be Ready, then advertise the first node pool's extended resources (its GPU slices) on
        it and wait until they are allocatable. Raises SandboxError naming the step and the log's tail."""
        rec = st.processes.get("kubelet")
        if rec is not None and process.alive(rec):
            self._log("real node already running")
            return
        bins = toolchain.ensure(list(realnode.BINARIES))
        rn = self.real_node_paths()
        for d in (rn.root, rn.containerd_root.parent, rn.cni_conf_dir.parent, rn.cni_conf_dir, rn.kubelet_dir,
                  rn.pod_logs, rn.images):
            files.private_dir(d)
        os.chmod(rn.root, 0o711)  # the containers' users (runAsUser) traverse to their rootfs and volumes
        os.chmod(rn.kubelet_dir, 0o711)
        st.ports.update(allocate(["real-node-kubelet", "real-node-kubelet-healthz"], previous=st.ports))
        st.save(self.paths.state_file)
        c = certs_mod.Certificates(self.paths.pki)
        venv = Path(sys.prefix)
        spec = json.loads(subprocess.run([str(bins["ctr"]), "oci", "spec"], capture_output=True, text=True,
                                         check=True).stdout)
        rn.base_spec.write_text(json.dumps(realnode.base_runtime_spec(spec, realnode.host_mounts(venv)), indent=1))
        rn.containerd_config.write_text(realnode.containerd_config(
            rn, bins["runc"], [bins[p].parent for p in ("loopback", "bridge", "host-local")]))
        (rn.cni_conf_dir / "10-kueue-cohorts.conflist").write_text(json.dumps(realnode.cni_config(rn), indent=1))
        rn.kubelet_config.write_text(yaml.safe_dump(realnode.kubelet_configuration(rn, st.ports, c.ca_crt)))
        identity = certs_mod.node_identity(c, realnode.NODE_NAME)
        kubeconfig.write_identity(rn.kubeconfig, f"https://{LOOPBACK}:{st.ports['kube-apiserver']}",
                                  c.ca_crt.read_bytes(), identity, realnode.NODE_NAME)
        api = self._client()
        apply_cluster_scoped(api, realnode.node_rbac())

        shims = f"{bins['containerd-shim-runc-v2'].parent}:{bins['runc'].parent}"  # the shim and runc by name
        self._spawn(st, "containerd", realnode.containerd_args(bins["containerd"], rn),
                    env={**os.environ, "PATH": f"{shims}:{os.environ.get('PATH', '/usr/bin:/bin')}"})
        ctr = [str(bins["ctr"]), f"--address={rn.socket}", f"--namespace={realnode.CTR_NAMESPACE}"]

        def containerd_serves() -> bool:
            if not process.alive(st.processes["containerd"]):
                raise SandboxError(f"containerd exited\n--- last lines of {self.paths.log('containerd')} ---\n"
                                   f"{_tail(self.paths.log('containerd'))}")
            return rn.socket.exists() and subprocess.run([*ctr, "version"], capture_output=True).returncode == 0

        wait_until(containerd_serves, timeout, f"containerd on {rn.socket}", interval=0.2)
        images = {"pause": realnode.pause_image(bins["pause"]), "host-python": realnode.host_python_image(venv)}
        for name, data in images.items():
            tar = rn.images / f"{name}.tar"
            tar.write_bytes(data)
            proc = subprocess.run([*ctr, "images", "import", str(tar)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise SandboxError(f"ctr images import {tar} failed: {proc.stderr.strip()}")
        pool = settings.node_pools[0] if settings.node_pools else None
        labels = {realnode.NODE_LABEL[0]: realnode.NODE_LABEL[1], **(dict(pool.labels) if pool else {})}
        realnode.prepare_cgroup_root()
        self._spawn(st, "kubelet", realnode.kubelet_args(bins["kubelet"], rn, labels))

        def ready() -> bool:
            if not process.alive(st.processes["kubelet"]):
                raise SandboxError("kubelet exited")
            return nodes_ready(api, [realnode.NODE_NAME])

        try:
            wait_until(ready, timeout, f"node {realnode.NODE_NAME} Ready", interval=0.5)
        except SandboxError as exc:
            raise SandboxError(f"{exc}\n--- last lines of {self.paths.log('kubelet')} ---\n"
                               f"{_tail(self.paths.log('kubelet'))}") from None
        extended = realnode.extended_capacity(pool.capacity) if pool else {}
        if extended:
            request_json(api, "PATCH", f"/api/v1/nodes/{realnode.NODE_NAME}/status",
                         body=realnode.capacity_patch(extended), content_type="application/json-patch+json")

            def allocatable() -> bool:
                node = get_json(api, f"/api/v1/nodes/{realnode.NODE_NAME}") or {}
                have = node.get("status", {}).get("allocatable", {})
                return all(have.get(k) == v for k, v in extended.items())

            wait_until(allocatable, timeout, f"{', '.join(extended)} allocatable on {realnode.NODE_NAME}")
        self._log(f"real node {realnode.NODE_NAME} Ready (containerd, runc, kubelet; taint {realnode.TAINT_KEY}, "
                  f"{', '.join(f'{k}={v}' for k, v in extended.items()) or 'no extended resources'})")

    @staticmethod
    def _crds(docs: Mapping[str, list[dict[str, Any]]], kueue_dir: Path, port: int, ca: bytes) -> list[dict[str, Any]]:
        """Return the CRDs of ``docs`` (by :data:`CRD_SOURCES` entry) as the sandbox applies them: Kueue's with the
        conversion webhook on loopback, each annotated with the SHA-256 of that content
        (:data:`CRD_HASH_ANNOTATION`)."""
        converted = kueue.conversion_webhook_crds(kueue_dir)
        out = []
        for source in docs:
            for crd in docs[source]:
                if crd["metadata"]["name"] in converted:
                    crd = kueue.with_conversion_webhook(crd, port, ca)
                else:
                    crd = {**crd, "metadata": dict(crd["metadata"])}
                digest = hashlib.sha256(json.dumps(crd, sort_keys=True).encode()).hexdigest()
                crd["metadata"]["annotations"] = {**crd["metadata"].get("annotations", {}),
                                                  CRD_HASH_ANNOTATION: digest}
                out.append(crd)
        return out

    @staticmethod
    def _changed_crds(api: ApiClient, crds: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Return the CRDs whose content the cluster does not have yet (one metadata-only LIST)."""
        existing = annotations_of(api, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
        return [crd for crd in crds if existing.get(crd["metadata"]["name"], {}).get(CRD_HASH_ANNOTATION)
                != crd["metadata"]["annotations"][CRD_HASH_ANNOTATION]]

    @staticmethod
    def _apply_all(api: ApiClient, objs: list[dict[str, Any]], status_kinds: AbstractSet[str] = frozenset(),
                   workers: int = 4) -> None:
        """Server-side apply ``objs`` (cluster-scoped kinds of :data:`sandbox.apply.CLUSTER_SCOPED`) concurrently
        with ``workers`` threads; the status of kinds in ``status_kinds`` too. Raises the first error."""
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for future in [pool.submit(apply_cluster_scoped, api, o, status=o["kind"] in status_kinds)
                           for o in objs]:
                future.result()

    def _wait_crds_served(self, api: ApiClient, crds: list[dict[str, Any]], timeout: float) -> None:
        """Wait until every CRD of ``crds`` is Established (watched, :func:`sandbox.apply.watch_until`) and listed by
        discovery (envtest's ``WaitForCRDs``)."""
        names = [crd["metadata"]["name"] for crd in crds]
        kinds = {(f"{crd['spec']['group']}/{next(v['name'] for v in crd['spec']['versions'] if v.get('storage'))}",
                  crd["spec"]["names"]["plural"]) for crd in crds}
        watch_until(api, CRDS, lambda seen: all(established(seen.get(name, {})) for name in names), timeout,
                    f"{len(names)} CRDs Established")
        wait_until(lambda: all(served(api, gv, plural) for gv, plural in kinds), timeout,
                   "CRDs served by discovery")

    def _start_managers(self, st: State, bins: Mapping[str, Path], c: certs_mod.Certificates,
                        kueue_delay: float, metrics: KueueMetrics = KueueMetrics(), trainer: bool = True) -> None:
        """Write the Kueue, JobSet and Trainer Configurations and start the three managers (without waiting), each
        restarted whenever it exits (``process.restarting``, as a Deployment's pod); the Trainer's only when
        ``trainer``. The Kueue manager is wrapped in ``sleep kueue_delay`` when that is > 0 (the delay's shell
        ``exec``s the restart loop); its metrics are the stack's ``kueue.metrics`` (``metrics``)."""
        kc = self.paths.kubeconfig
        cfg = self.paths.config / "kueue.yaml"
        cfg.write_text(yaml.safe_dump(kueue.configuration(st.ports, c.webhook_dir, metrics=metrics), sort_keys=False))
        upper, work = kueue.prepare_etc_overlay(self.paths.root / "kueue-etc", c.metrics_dir)
        self._spawn(st, "kueue", kueue.delayed(process.restarting(kueue.manager_args(bins["kueue"], cfg, kc, upper,
                                                                                     work)), kueue_delay))
        jobset_cfg = self.paths.config / "jobset.yaml"
        jobset_cfg.write_text(yaml.safe_dump(jobcontrollers.jobset_configuration(st.ports, c.webhook_dir)))
        self._spawn(st, "jobset-controller-manager", process.restarting(jobcontrollers.manager_args(
            bins["jobset-controller-manager"], jobset_cfg, kc)))
        if trainer:
            self._start_trainer(st, bins[TRAINER], c)

    def _start_trainer(self, st: State, binary: Path, c: certs_mod.Certificates) -> None:
        """Write the Trainer's Configuration and start its manager (restarted whenever it exits, with its own
        ``TMPDIR`` holding the webhook pair, see :mod:`sandbox.jobcontrollers`); the caller waits for its
        ``/readyz``."""
        trainer_cfg = self.paths.config / "trainer.yaml"
        trainer_cfg.write_text(yaml.safe_dump(jobcontrollers.trainer_configuration(st.ports)))
        tmpdir = jobcontrollers.trainer_tmpdir(self.paths.run / TRAINER / "tmp", c.webhook_dir)
        self._spawn(st, TRAINER, process.restarting(jobcontrollers.manager_args(binary, trainer_cfg,
                                                                                self.paths.kubeconfig)),
                    env={**os.environ, "TMPDIR": str(tmpdir)})

    def manager_trainer(self, settings: Settings) -> ManagerTrainer:
        """What serves the TrainJob API in this sandbox for the stack ``settings``: the stack's
        ``multiKueue.managerTrainer`` on the manager (Controller when the stack has no ``multiKueue``), always
        Controller on a worker (MultiKueue clears ``spec.managedBy`` on the worker's copy of a TrainJob, which the
        worker's Trainer runs: Kueue v0.19.2 ``pkg/controller/jobs/trainjob/trainjob_multikueue_adapter.go``
        SyncJob).

        Why CRDsOnly exists: the Trainer v2.2.1 TrainJob reconciler runs every TrainJob whatever its
        ``spec.managedBy`` (``pkg/controller/trainjob_controller.go`` ``Reconcile``, l.100: no managedBy check;
        v2.3.0 returns early for an external manager at l.89, kubeflow/trainer#3632), so with its controller on the
        manager a dispatched TrainJob runs on the manager as well as on the worker."""
        if self.worker or settings.multi_kueue is None:
            return ManagerTrainer.CONTROLLER
        return settings.multi_kueue.manager_trainer

    def _delete_webhooks(self, api: ApiClient, configs: list[dict[str, Any]]) -> list[str]:
        """Delete the webhook configurations ``configs`` (Mutating/ValidatingWebhookConfiguration, by kind and name)
        where they exist; return the names deleted."""
        return [c["metadata"]["name"] for c in configs
                if delete(api, f"{CLUSTER_SCOPED[(c['apiVersion'], c['kind'])]}/{c['metadata']['name']}")]

    def _reconcile_trainer(self, settings: Settings, st: State, timeout: float) -> None:
        """Make a running sandbox's Trainer what the stack ``settings`` asks for (:meth:`manager_trainer`), and record
        it in ``st``.

        CRDsOnly: the Trainer's controller manager is stopped (its process group) and its webhook configurations
        (``defaulter.trainer.kubeflow.org``, ``validator.trainer.kubeflow.org``, failurePolicy Fail) are deleted,
        since nothing would answer them and every TrainJob, TrainingRuntime and ClusterTrainingRuntime would be
        refused; the CRDs, and the TrainJobs, JobSets and TrainingRuntimes on the cluster, stay. Controller: the
        manager is started if it does not run, waited for (``/readyz``, at most ``timeout`` seconds), then its
        webhook configurations are applied. Raises SandboxError when it does not become healthy."""
        wanted = self.manager_trainer(settings)
        rec = st.processes.get(TRAINER)
        alive = rec is not None and process.alive(rec)
        if wanted == st.manager_trainer and (alive or wanted == ManagerTrainer.CRDS_ONLY):
            return
        pins = tv.load()
        entry = pins.entry_for(TRAINER)
        c = certs_mod.Certificates(self.paths.pki)
        hooks = jobcontrollers.trainer_webhooks(toolchain.module_dir(entry.module, entry.module_version),
                                                st.ports["trainer-webhook"], c.ca_crt.read_bytes())
        api = self._client()
        if wanted == ManagerTrainer.CRDS_ONLY:
            if rec is not None:
                process.stop(rec)
                del st.processes[TRAINER]
            st.manager_trainer = wanted
            st.save(self.paths.state_file)
            deleted = self._delete_webhooks(api, hooks)
            self._log(f"multiKueue.managerTrainer CRDsOnly: stopped {TRAINER}, deleted "
                      f"{', '.join(deleted) or 'no webhook configurations'}; the Trainer's CRDs stay")
            return
        if not alive:
            self._start_trainer(st, toolchain.ensure([TRAINER])[TRAINER], c)
            self._wait_healthy(st, TRAINER, timeout)
        self._apply_all(api, hooks)
        st.manager_trainer = wanted
        st.save(self.paths.state_file)
        self._log(f"{TRAINER} runs, with its webhooks {', '.join(h['metadata']['name'] for h in hooks)}")

    def _start_kserve(self, api: ApiClient, st: State, bins: Mapping[str, Path], c: certs_mod.Certificates,
                      module_dir: Path) -> None:
        """Apply KServe's ``inferenceservice-config`` (RawDeployment, :func:`sandbox.kserve.config_map`; its
        namespace is applied by now) and start KServe's manager (restarted whenever it exits), with ``TMPDIR``
        holding the webhook pair. Called once its CRDs are served: the manager reads the ConfigMap once at start
        and exits when it is missing or an informer of its kinds cannot sync."""
        apply_cluster_scoped(api, kserve.config_map(module_dir))
        tmpdir = jobcontrollers.trainer_tmpdir(self.paths.run / "kserve-manager" / "tmp", c.webhook_dir)
        self._spawn(st, "kserve-manager", process.restarting(kserve.manager_args(
            bins["kserve-manager"], self.paths.kubeconfig, st.ports)),
            env={**os.environ, **kserve.manager_env(tmpdir)})

    def _applied(self, api: ApiClient, objs: list[dict[str, Any]]) -> bool:
        """Apply ``objs`` (:meth:`_apply_all`); return False instead of raising while the apiserver cannot reach a
        webhook they go through yet (HTTP 500 ``failed calling webhook``), True once every one is applied."""
        try:
            self._apply_all(api, objs)
        except ApiException as exc:
            if exc.status == 500 and "failed calling webhook" in str(exc.body):
                return False
            raise
        return True

    def _release_node_leases(self, api: ApiClient) -> None:
        """Delete the node Leases (``kube-node-lease/<node>``) of the kwok nodes kept in etcd from a previous run.

        kwok identifies itself with a fresh random holder identity per process and only takes over a node whose Lease
        has expired (``--node-lease-duration-seconds``, 40 s): without this, pods on a restarted sandbox stay Pending
        (or Terminating) for up to 40 s after ``up`` reports the nodes Ready. The previous kwok is stopped by now.
        """
        selector = f"{kwok.NODE_LABEL[0]}={kwok.NODE_LABEL[1]}"
        released = [name for name in names_of(api, "/api/v1/nodes", selector)
                    if delete(api, f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}")]
        if released:
            self._log(f"released the node Leases of the previous kwok: {', '.join(released)}")

    def _client(self) -> ApiClient:

        api: ApiClient = kconfig.new_client_from_config(config_file=str(self.paths.kubeconfig))
        api.configuration.retries = 3
        return api

    def _wait_webhook(self, api: ApiClient, timeout: float) -> None:
        """Wait until the apiserver reaches Kueue's webhooks: a server-side dry-run create of a ResourceFlavor
        goes through the mutating and validating ResourceFlavor webhooks (failurePolicy Fail)."""
        body = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                "metadata": {"name": "sandbox-webhook-probe"}}
        wait_until(lambda: request_json(api, "POST", "/apis/kueue.x-k8s.io/v1beta2/resourceflavors", body=body,
                                        query=[("dryRun", "All")], content_type="application/json") is not None,
                   timeout, "the apiserver to reach Kueue's webhooks")

    def _reconcile_nodes(self, stack_path: Path, st: State, settings: Optional[Settings] = None,
                         timeout: float = 120.0, api: Optional[ApiClient] = None,
                         applied: bool = False) -> None:
        """Apply one kwok node per node of the stack's nodePools (unless ``applied``: the caller did), delete kwok
        nodes no longer in it, wait until they are Ready."""

        settings = settings or load_stack_file(stack_path)
        api = api or self._client()
        nodes = kwok.node_manifests(self._node_pools(settings))
        names = [n["metadata"]["name"] for n in nodes]
        if not applied:
            self._apply_all(api, nodes, status_kinds={"Node"})
        selector = f"{kwok.NODE_LABEL[0]}={kwok.NODE_LABEL[1]}"
        for name in names_of(api, "/api/v1/nodes", selector):
            if name not in names:
                delete(api, f"/api/v1/nodes/{name}")
        wait_until(lambda: nodes_ready(api, names), timeout, f"{len(names)} kwok nodes Ready")
        if st.stack != str(stack_path):
            st.stack = str(stack_path)
            st.save(self.paths.state_file)
        self._log(f"{len(names)} kwok nodes Ready from {stack_path.name}: {', '.join(names)}")

    # ----- down ------------------------------------------------------------------------------------------------

    def _stop_all(self) -> list[str]:
        """Stop the process group of every recorded component, in reverse start order, also when its leader has
        exited while other members of its group still run (:func:`sandbox.process.stop`); return the names of the
        components that had a live process."""
        st = self.state()
        stopped = []
        for name in reversed(list(st.processes)):
            rec = st.processes[name]
            had_process = process.group_alive(rec)
            killed = process.stop(rec)
            if had_process:
                stopped.append(name + (" (SIGKILL)" if killed else ""))
            del st.processes[name]
            st.save(self.paths.state_file)
        if self.real_node_paths().root.exists():  # its containers, shims, mounts and bridge outlive both processes
            for line in realnode.cleanup(self.real_node_paths()):
                self._log(f"real node: {line}")
        return stopped

    def stop_prometheus(self) -> bool:
        """Stop the sandbox's Prometheus alone (its TSDB stays); return True when it had a live process."""
        with locked(self.paths.lock):
            st = self.state()
            rec = st.processes.pop(prom.NAME, None)
            if rec is None:
                return False
            had_process = process.group_alive(rec)
            process.stop(rec)
            st.save(self.paths.state_file)
            return had_process

    def stop_real_node(self) -> list[str]:
        """Stop the real node alone (kubelet, then containerd; :func:`sandbox.realnode.cleanup` of its containers,
        mounts and bridge) and delete its Node object, so the rest of the sandbox runs on as without it; return the
        names of the processes that were alive."""
        with locked(self.paths.lock):
            st = self.state()
            stopped = []
            for name in reversed(realnode.COMPONENTS):
                rec = st.processes.pop(name, None)
                if rec is not None:
                    if process.group_alive(rec):
                        stopped.append(name)
                    process.stop(rec)
                    st.save(self.paths.state_file)
            if self.real_node_paths().root.exists():
                for line in realnode.cleanup(self.real_node_paths()):
                    self._log(f"real node: {line}")
            if self.running():
                delete(self._client(), f"/api/v1/nodes/{realnode.NODE_NAME}")
            return stopped

    def down(self, purge: bool = False) -> list[str]:
        """Stop every recorded component (process groups, reverse start order); return the names stopped.

        With ``purge`` also delete the state directory (certificates, etcd data, logs, kubeconfig).
        """
        with locked(self.paths.lock):
            stopped = self._stop_all()
        if purge and self.paths.root.exists():
            shutil.rmtree(self.paths.root)
        return stopped
