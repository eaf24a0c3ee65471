"""Command line: ``python -m kueue_cohorts.sandbox up|down|status|logs``."""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import deque
from pathlib import Path
from typing import Optional

from kueue_cohorts.components.settings import raw_from_stack_file
from kueue_cohorts.components.settings.errors import SettingsError
from kueue_cohorts.components.settings.secrets import is_secret
from kueue_cohorts.components.settings.stackfile import StackFileError, stack_path
from kueue_cohorts.sandbox import prometheus, realnode
from kueue_cohorts.sandbox.apply import SandboxError
from kueue_cohorts.sandbox.cluster import COMPONENTS, Sandbox
from kueue_cohorts.sandbox.status import CohortsView, render
from kueue_cohorts.scaffold import Known, Parser, Tool, add_verbose, guard
from kueue_cohorts.toolchain import ToolchainError

DESCRIPTION = ("Local Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok "
               "with fake GPU nodes) and the real Kueue manager, on 127.0.0.1. State dir: $KUEUE_COHORTS_SANDBOX_DIR "
               "or ~/.local/state/kueue-cohorts/sandbox.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the subcommands ``up``, ``down``, ``status``, ``logs`` and their flags to ``p`` (``python -m
    kueue_cohorts.sandbox`` and
    ``kueue-cohorts sandbox``); ``run`` reads the Namespace it gives."""
    common = Parser(add_help=False)
    add_verbose(common)
    sub = p.add_subparsers(dest="command", required=True, metavar="{up,down,status,logs}")
    up = sub.add_parser("up", parents=[common], help="start (idempotent) and print the kubeconfig path",
                        description="Start the local control plane and Kueue (a running one is kept), with the stack's "
                                    "node pools as fake GPU nodes; print the kubeconfig path.")
    up.add_argument("--stack", default="dev",
                    help="stack whose nodePools become kwok nodes and whose multiKueue.managerTrainer decides whether "
                         "the Trainer's controller runs (CRDsOnly: the Trainer's CRDs only; a running sandbox is "
                         "switched) (default: dev)")
    up.add_argument("--stack-file", type=Path, help="a stack file outside stacks/ (overrides --stack)")
    up.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for each component")
    up.add_argument("--kueue-delay", type=float, default=0.0, metavar="SECONDS",
                    help="start the Kueue manager SECONDS late and do not wait for it (to test clients that must "
                         "wait for Kueue's webhooks, e.g. a stack with kueue.install: true)")
    up.add_argument("--workers", type=int, default=0, metavar="N",
                    help="also start N MultiKueue worker clusters (each its own etcd, kube-apiserver, Kueue, JobSet "
                         "and Trainer on other loopback ports; named after the stack's multiKueue.workers, else "
                         "worker-1..N), under <state dir>/workers/<name>")
    up.add_argument("--with-prometheus", action="store_true",
                    help="also start Prometheus on loopback, scraping Kueue's metrics and evaluating the stack's "
                         "alerts (TSDB under the state dir); its URL is printed")
    up.add_argument("--real-node", action="store_true",
                    help="also start one real node (containerd, runc and a kubelet built from pinned modules on "
                         "first use; labelled and tainted kueue-cohorts/real-node, with the first node pool's GPU "
                         "resources) that runs real containers; on a running sandbox too (docs/sandbox.md)")
    up.add_argument("--only-if-sandbox", action="store_true",
                    help="do nothing unless the stack's kueue-cohorts:cluster.mode is sandbox (for `make up`)")
    down = sub.add_parser("down", parents=[common], help="stop every component started by up",
                          description="Stop every component `up` started (--purge: also delete its state).")
    down.add_argument("--purge", action="store_true", help="also delete the state dir (certs, etcd data, logs)")
    sub.add_parser("status", parents=[common],
                   help="component health and ClusterQueue usage; exit 1 unless all healthy",
                   description="Each component's health and the ClusterQueues' usage; exit 1 unless all are healthy.")
    logs = sub.add_parser("logs", parents=[common],
                          help="print the log of one component (default: the last lines of each)",
                          description="Print the log of one component (default: the last lines of each); -f follows "
                                      "it.")
    logs.add_argument("component", nargs="?", choices=COMPONENTS + realnode.COMPONENTS)
    logs.add_argument("-n", "--lines", type=int, default=40)
    logs.add_argument("-f", "--follow", action="store_true")


def _logs(sandbox: Sandbox, component: str | None, lines: int, follow: bool) -> int:
    names = [component] if component else [*COMPONENTS, *(c for c in realnode.COMPONENTS
                                                          if sandbox.paths.log(c).exists())]
    for name in names:
        path = sandbox.paths.log(name)
        if not path.exists():
            print(f"==> {name}: no log at {path}")
            continue
        if len(names) > 1:
            print(f"==> {path} <==")
        with open(path, errors="replace") as fh:
            sys.stdout.write("".join(deque(fh, maxlen=lines)))
            if follow and component:
                try:
                    while True:
                        chunk = fh.read()
                        if chunk:
                            sys.stdout.write(chunk)
                            sys.stdout.flush()
                        else:
                            time.sleep(0.5)
                except KeyboardInterrupt:
                    return 0
    return 0


#: A component's own error lines in its log: klog errors and fatals (``E1130 ...``, ``F1130 ...``), JSON or
#: logfmt levels (Kueue, JobSet and Trainer log JSON; etcd logs JSON), Go panics.
_LOG_ERROR = re.compile(r'^[EF]\d{4} |"level":"(error|fatal|panic)"|\blevel=(error|fatal)\b|^panic: |^fatal error: ')
_TAIL_MARK = re.compile(r"^--- last lines of (?P<log>.+) ---$", re.MULTILINE)


def error_first(message: str, prefix: str) -> list[str]:
    """Return the lines to print for a SandboxError ``message``, the component's own error lines first.

    A message of a component that did not become healthy ends with ``--- last lines of <log> ---`` and the log's
    tail: the tail's error lines (_LOG_ERROR, at most 8) come first, then ``prefix`` + the message's first part,
    then where the full log is. Any other message is ``prefix`` + its first line, then its other lines.
    """
    mark = _TAIL_MARK.search(message)
    if not mark:
        lines = message.strip().splitlines() or [""]
        return [prefix + lines[0], *lines[1:]]
    head, tail = message[:mark.start()].strip(), message[mark.end():].splitlines()
    errors = [line.strip()[:400] for line in tail if _LOG_ERROR.search(line.strip())]
    return [*(f"  {line}" for line in errors[-8:]), prefix + head, f"full log: {mark.group('log')}"]


def run(args: argparse.Namespace, cohorts_view: Optional[CohortsView] = None) -> int:
    """Run ``args.command`` (``args`` as ``add_arguments`` shapes it); ``status`` adds ``cohorts_view`` of each
    running cluster (sandbox.status). Return the exit status (0 ok, 1 failure or unhealthy, 2 usage or config
    error). A failure prints the cluster's or component's own error lines first and no
    Python traceback unless ``--verbose`` (kueue_cohorts.scaffold.guard)."""
    return guard("sandbox", lambda: _main(args, cohorts_view), verbose=args.verbose, what=args.command,
                 known=[Known((ToolchainError, StackFileError), 2)],
                 interrupted=lambda: ["sandbox: interrupted; `kueue-cohorts sandbox down` stops whatever was started"])


#: ``python -m kueue_cohorts.sandbox``: the same as ``kueue-cohorts sandbox``.
TOOL = Tool("python -m kueue_cohorts.sandbox", DESCRIPTION, add_arguments, run)
main = TOOL.main


def worker_names(stack_path: Path, count: int) -> list[str]:
    """The names of the first ``count`` MultiKueue workers of the stack file (``multiKueue.workers[].name``), then
    ``worker-<i>`` for any beyond those it declares."""
    raw = raw_from_stack_file(stack_path).get("multiKueue")
    declared = [w.get("name") for w in (raw.get("workers") or []) if isinstance(w, dict)] if isinstance(raw, dict) \
        else []
    names = [str(n) for n in declared if isinstance(n, str)][:count]
    return names + [f"worker-{i}" for i in range(len(names) + 1, count + 1)]


def worker_sandboxes(sandbox: Sandbox, stack_path: Path, count: int) -> list[tuple[str, Sandbox]]:
    """The worker sandboxes ``up --workers count`` starts, each under ``<state dir>/workers/<name>``."""
    return [(name, Sandbox(sandbox.paths.worker(name), worker=name)) for name in worker_names(stack_path, count)]


def existing_workers(sandbox: Sandbox) -> list[tuple[str, Sandbox]]:
    """Every worker sandbox that has a state directory under ``<state dir>/workers``."""
    root = sandbox.paths.root / "workers"
    return [(d.name, Sandbox(sandbox.paths.worker(d.name), worker=d.name))
            for d in sorted(root.iterdir()) if d.is_dir()] if root.is_dir() else []


def _main(args: argparse.Namespace, cohorts_view: Optional[CohortsView]) -> int:
    sandbox = Sandbox()
    if args.command == "up":
        path = args.stack_file or stack_path(args.stack)
        if not Path(path).is_file():
            print(f"sandbox: no stack file {path} (stacks/Pulumi.<stack>.yaml)", file=sys.stderr)
            return 2
        if args.only_if_sandbox:

            # Only the target matters here; the stack's config is validated (and reported) by the program. A
            # secret (`secure:`) cluster or mode cannot be read offline: up then refuses it, naming the key.
            cluster = raw_from_stack_file(Path(path)).get("cluster") or {}
            mode = cluster.get("mode", "sandbox") if isinstance(cluster, dict) and not is_secret(cluster) else None
            if isinstance(mode, str) and mode != "sandbox":
                print(f"stack {Path(path).name} targets cluster mode {mode}: no sandbox needed")
                return 0
        if args.workers < 0:
            print("sandbox: --workers takes a count (0 or more)", file=sys.stderr)
            return 2
        try:
            report = sandbox.up(path, timeout=args.timeout, kueue_delay=args.kueue_delay,
                                with_prometheus=args.with_prometheus, real_node=args.real_node)
            workers = [(name, worker.up(path, timeout=args.timeout))
                       for name, worker in worker_sandboxes(sandbox, path, args.workers)]
        except SettingsError as exc:
            print(f"sandbox: {exc}", file=sys.stderr)
            return 2
        except SandboxError as exc:
            print("\n".join(error_first(str(exc), "sandbox up failed: ")), file=sys.stderr)
            return 1
        state = "already running" if report.already_running else f"up in {report.seconds['total']:.1f} s"
        print(f"sandbox {state}; kubeconfig: {report.kubeconfig}")
        for name, worker_report in workers:
            worker_state = ("already running" if worker_report.already_running
                            else f"up in {worker_report.seconds['total']:.1f} s")
            print(f"worker {name} {worker_state}; kubeconfig: {worker_report.kubeconfig}")
        print(f"export KUBECONFIG={report.kubeconfig}")
        if args.with_prometheus:
            print(f"prometheus: {prometheus.url(sandbox.paths)}")
        return 0
    if args.command == "down":
        stopped = [f"{name}/{component}" for name, worker in existing_workers(sandbox)
                   for component in worker.down(purge=False)]
        stopped = sandbox.down(purge=args.purge) + stopped
        print(f"stopped: {', '.join(stopped) if stopped else 'nothing was running'}"
              + (f"; removed {sandbox.paths.root}" if args.purge else ""))
        if args.purge:
            print("the Pulumi state of stacks applied to it still lists their resources: after the next `up`, run "
                  "`kueue-cohorts refresh --stack dev` (or `destroy`) before `make up`, or it finds nothing to do")
        return 0
    if args.command == "status":

        text, ok = render(sandbox, cohorts_view)
        print(text)
        for name, worker in existing_workers(sandbox):
            if not worker.state().processes:  # stopped by `down`: not part of the running sandbox
                print(f"\n== worker {name} == stopped (kueue-cohorts sandbox up --workers N starts it)")
                continue
            worker_text, worker_ok = render(worker, cohorts_view)
            print(f"\n== worker {name} ==\n{worker_text}")
            ok = ok and worker_ok
        return 0 if ok else 1
    return _logs(sandbox, args.component, args.lines, args.follow)
