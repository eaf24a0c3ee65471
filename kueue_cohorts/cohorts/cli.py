"""Command line: ``python -m kueue_cohorts.cohorts status|verify|report|monitoring [--stack NAME]``, ``python -m
kueue_cohorts.cohorts trace
synth|record --stack NAME`` (a demand trace) and ``python -m kueue_cohorts.cohorts whatif --stack NAME --trace FILE
[--base REF]``
(the trace replayed offline on the stack's quotas, and on the base ref's).

Exit codes: 0 ok; 1 differences (verify), the cluster or Prometheus did not answer, or (whatif) inference waits
longer with the change; 2 usage or config error (bad arguments, missing or invalid stack file or trace, a stack the
simulator cannot model, a stack in render mode, a missing kubeconfig, an unknown git ref). User errors print one
message, no
traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, TextIO

import urllib3
import yaml
from kubernetes import client as k8s

from kueue_cohorts.cohorts import report
from kueue_cohorts.cohorts.expected import worker_expected
from kueue_cohorts.cohorts.live import ClusterUnreachable, read_snapshot
from kueue_cohorts.cohorts.render import as_json, table
from kueue_cohorts.cohorts.target import Target, TargetError, load_assembled, load_stack, target_of, worker_target
from kueue_cohorts.cohorts.verify import LEAK_GRACE, WORKER_CHECKS, ClusterObjects, Difference, verify
from kueue_cohorts.cohorts.verify.unqueued import LIVE_CHECKS
from kueue_cohorts.cohorts.view import build_view
from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model import alerts, dashboard
from kueue_cohorts.components.model.assembly import AssembledStack
from kueue_cohorts.components.model.plans import stack_plans
from kueue_cohorts.components.settings import PROJECT, ClusterMode, Settings, stackfile
from kueue_cohorts.components.settings.errors import SettingsError
from kueue_cohorts.components.settings.stackfile import StackFileError, stack_path
from kueue_cohorts.sandbox import prometheus as sandbox_prometheus
from kueue_cohorts.sandbox.paths import SandboxPaths
from kueue_cohorts.scaffold import Known, Parser, add_verbose, guard
from kueue_cohorts.whatif import gitbase
from kueue_cohorts.whatif.chart import chart_html
from kueue_cohorts.whatif.compare import as_json as whatif_json
from kueue_cohorts.whatif.compare import section, what_if
from kueue_cohorts.whatif.kueue import Unsupported
from kueue_cohorts.whatif.record import TraceRecorder, queue_kinds, synth_trace, watch_workloads, write_trace
from kueue_cohorts.whatif.report import report as whatif_report
from kueue_cohorts.whatif.trace import Trace, TraceError


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be above 0")
    return value


#: Each command's one line (``kueue-cohorts --help``) and its description (``kueue-cohorts COMMAND --help``).
HELP: dict[str, tuple[str, str]] = {
    "status": ("per cohort, ClusterQueue and resource: quotas, usage, borrowed, lent; Workloads; latest preemptions",
               "Per cohort, ClusterQueue and resource: nominalQuota, borrowingLimit, lendingLimit, usage, borrowed, "
               "lent; the admitted and pending Workloads; the latest preemptions with reason, victim, preemptor and "
               "time."),
    "verify": ("check the live cluster against the stack and its promises; exit 1 with what breaks them",
               "Compare the live cluster with the stack's rendered objects (every object present with its rendered "
               "fields equal, the inference ClusterQueue never borrowing, every LocalQueue's namespace selected, the "
               "guardrails present, bound, neither weakened to Warn nor narrowed) and check the promises on what is "
               "live: the rule book over the live ClusterQueues, Cohorts and WorkloadPriorityClasses of the stack's "
               "cohort trees, Kueue's live manager Configuration and the capacity of the live nodes per "
               "ResourceFlavor; a ClusterQueue, Cohort or priority class that got in by another path is named, and so "
               "is a Workload that holds quota while evicted with no pod (leaked quota). Exit 1 with the list (kind, "
               "name, field path, rule)."),
    "report": ("per queue and resource: hours owned, used, borrowed and lent; preemptions; admission wait; steps lost "
               "(from Prometheus)",
               "Per tenant and ClusterQueue over the last --since: accelerator-hours owned (nominalQuota x time), "
               "used, borrowed and lent, preemptions with their cause, admission wait p50/p95 and training steps "
               "lost, from the Prometheus HTTP API (cohorts/report.py says how each figure is computed)."),
    "monitoring": ("write the stack's alerts (PrometheusRule and rules file) and Grafana dashboard (JSON and "
                   "ConfigMap) into a directory",
                   "Render the stack's monitoring files, offline: prometheusrule.yaml (monitoring.coreos.com/v1), "
                   "rules.yaml (a Prometheus rules file), dashboard.json and dashboard-configmap.yaml (label "
                   "grafana_dashboard: \"1\"), and with a trainingRuntime podmonitor.yaml (the trainer's own "
                   "metrics)."),
    "trace": ("a demand trace for the stack: synthetic, or recorded from its live cluster",
              "Write a demand trace (JSON Lines, schema/demand-trace.schema.json): `synth` a seeded synthetic one, "
              "`record` one watched on the stack's live cluster."),
    "whatif": ("replay a trace on the stack's quotas (and the base ref's), offline",
               "Replay a demand trace on the stack's Kueue objects as Kueue 0.19.2 would admit it (pure simulation, "
               "no cluster) and, with --base, on the stack file at that git ref: per queue and tenant the admission "
               "wait, start delay, GPU-hours used and borrowed, preemptions, training lost and workloads never "
               "admitted. Exit 1 when inference waits longer with the change."),
}
COMMANDS = tuple(HELP)


def _stack_path(args: argparse.Namespace) -> Path:
    """The stack file a command reads: ``--stack-file``, else the stack's (``stacks/Pulumi.<stack>.yaml``)."""
    return Path(args.stack_file) if args.stack_file else stack_path(args.stack)


def _stack_args(sp: argparse.ArgumentParser, output: tuple[str, ...] = ("table", "json")) -> None:
    """The flags every command of cohorts takes: ``--stack``, ``--stack-file``, ``--verbose`` and (when ``output``
    names formats) ``--output``."""
    add_verbose(sp)
    sp.add_argument("--stack", default="dev", help="stack name: stacks/Pulumi.<stack>.yaml (default dev)")
    sp.add_argument("--stack-file", type=Path, help="a stack file outside stacks/ (overrides --stack)")
    if output:
        sp.add_argument("--output", "-o", choices=output, default="table", help="default table")


def add_arguments(p: argparse.ArgumentParser, command: str) -> None:
    """Add the flags (and, for ``trace``, the subcommands ``synth``/``record``) of ``command`` (one of COMMANDS) to
    ``p``, with ``command`` as the default of ``command``: used by ``python -m kueue_cohorts.cohorts COMMAND`` and
    ``kueue-cohorts COMMAND``; ``run`` reads the Namespace it gives."""
    p.set_defaults(command=command)
    if command == "status":
        _stack_args(p)
        p.add_argument("--all", action="store_true", help="every cohort on the cluster, not only the stack's")
        p.add_argument("--preemptions", type=_positive_int, default=10, metavar="N",
                       help="latest preemptions per cohort (default 10)")
        p.add_argument("--watch", "-w", action="store_true", help="refresh until Ctrl-C (or --count refreshes)")
        p.add_argument("--interval", type=_positive_float, default=2.0, metavar="SECONDS",
                       help="seconds between refreshes with --watch (default 2)")
        p.add_argument("--count", type=_positive_int, metavar="N", help="with --watch: stop after N views")
    elif command == "verify":
        _stack_args(p)
        p.add_argument("--watch", "-w", action="store_true",
                       help="check again every --interval seconds and report each finding as it appears or goes "
                            "(until Ctrl-C or --count checks); exit 1 if the last check found anything")
        p.add_argument("--interval", type=_positive_float, default=5.0, metavar="SECONDS",
                       help="seconds between checks with --watch (default 5)")
        p.add_argument("--count", type=_positive_int, metavar="N", help="with --watch: stop after N checks")
        p.add_argument("--leak-grace", type=_positive_float, default=LEAK_GRACE.total_seconds(), metavar="SECONDS",
                       help="how long an evicted Workload may hold quota with no pod before it is reported as leaked "
                            f"quota (default {int(LEAK_GRACE.total_seconds())})")
    elif command == "report":
        _stack_args(p, tuple(report.RENDERERS))
        p.add_argument("--since", default="7d", help="the window, ending now: 7d, 36h, 90m, ... (default 7d)")
        p.add_argument("--prometheus", metavar="URL",
                       help=f"the Prometheus to read (default ${PROMETHEUS_ENV}, else the sandbox's for a sandbox "
                            "stack)")
        p.add_argument("--step", type=_positive_float, metavar="SECONDS",
                       help="sampling step (default the Prometheus's scrape_interval)")
        p.add_argument("--out", type=Path, metavar="FILE", help="write the report there instead of to stdout")
    elif command == "monitoring":
        _stack_args(p, ())
        p.add_argument("--out", type=Path, required=True, metavar="DIR", help="directory for the four files")
    elif command == "trace":
        trace_sub = p.add_subparsers(dest="trace_command", required=True, metavar="{synth,record}")
        sy = trace_sub.add_parser("synth", help="a seeded synthetic trace: diurnal inference, a training backlog",
                                  description="A seeded synthetic trace for the stack's queues: inference replicas on "
                                              "a diurnal curve with peaks, a Poisson backlog of training jobs (whatif/"
                                              "synth.py).")
        _stack_args(sy)
        sy.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
        sy.add_argument("--days", type=_positive_float, default=7.0, help="length in days (default 7)")
        sy.add_argument("--step-minutes", type=_positive_float, default=15.0,
                        help="how often the inference replica count moves (default 15)")
        sy.add_argument("--training-per-day", type=float, default=60.0, help="training jobs a day (default 60)")
        sy.add_argument("--tenant-per-day", type=float, default=24.0, help="jobs a day per tenant (default 24)")
        sy.add_argument("--out", type=Path, help="write here instead of stdout")
        rc = trace_sub.add_parser("record", help="watch the live cluster's Workloads for a while, write them as a "
                                                 "trace",
                                  description="Watch the Workloads of the stack's LocalQueues on its live cluster "
                                              "(list, then the watch API) for --for, and write them as a trace.")
        _stack_args(rc)
        rc.add_argument("--for", dest="seconds", type=_duration, default=3600.0, metavar="DURATION",
                        help="how long to watch: 90s, 30m, 1h (default 1h)")
        rc.add_argument("--checkpoint-seconds", type=_positive_float,
                        help="the training checkpoint interval to write on training lines (default none)")
        rc.add_argument("--out", type=Path, help="write here instead of stdout")
    elif command == "whatif":
        _stack_args(p, ("table", "json", "html"))
        p.add_argument("--trace", type=Path, help="the demand trace (JSON Lines); its times count from now with "
                                                  "--from-cluster")
        p.add_argument("--from-cluster", action="store_true",
                       help="start from what the stack's live cluster runs and queues now (its Workloads, listed "
                            "once, as `trace record` writes them), then the trace, if any")
        p.add_argument("--base", metavar="REF", help="git ref of the base stack file (e.g. origin/main)")
        p.add_argument("--chart", type=Path, metavar="FILE",
                       help="write the chart of GPUs held per queue (one HTML page) here")
        p.add_argument("--repo", type=Path, default=Path.cwd(),
                       help="git work tree for --base (default: current dir)")
    else:
        raise ValueError(f"no command {command!r}: one of {', '.join(COMMANDS)}")


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m kueue_cohorts.cohorts", description=(
        "Kueue cohorts of a kueue-cohorts stack on its live cluster (the sandbox, or the stack's kubeconfig and "
        "context). Exit codes: 0 ok, 1 differences or cluster failure, 2 usage or config error."))
    sub = p.add_subparsers(dest="command", required=True, metavar="{" + ",".join(COMMANDS) + "}")
    for command, (summary, description) in HELP.items():
        add_arguments(sub.add_parser(command, help=summary, description=description), command)
    return p


def _duration(text: str) -> float:
    """90, 90s, 30m, 1h, 1h30m -> seconds."""
    total, number = 0.0, ""
    for char in text.strip():
        if char.isdigit() or char == ".":
            number += char
        elif char in "smh" and number:
            total += float(number) * {"s": 1, "m": 60, "h": 3600}[char]
            number = ""
        else:
            raise argparse.ArgumentTypeError("a duration such as 90s, 30m or 1h")
    total += float(number) if number else 0.0
    if total <= 0:
        raise argparse.ArgumentTypeError("must be above 0")
    return total



PROMETHEUS_ENV = "KUEUE_COHORTS_PROMETHEUS_URL"


def prometheus_url(explicit: Optional[str], settings: Any, environ: Optional[dict[str, str]] = None) -> str:
    """The Prometheus to read: ``explicit`` (--prometheus), else ``$KUEUE_COHORTS_PROMETHEUS_URL``, else the sandbox's
    for a stack of cluster mode sandbox when it runs. Raises TargetError naming the three ways when there is none."""
    env = os.environ if environ is None else environ
    found = explicit or env.get(PROMETHEUS_ENV)
    if not found and settings.cluster.mode == ClusterMode.SANDBOX:
        found = sandbox_prometheus.url(SandboxPaths.default(env))
    if not found:
        raise TargetError(f"no Prometheus to read: pass --prometheus URL or set {PROMETHEUS_ENV} (for the sandbox: "
                          "`kueue-cohorts sandbox up --with-prometheus`)")
    return found


def _report(args: argparse.Namespace, out: TextIO) -> int:
    settings, _target, name = _settings_and_target(args)
    try:
        window = report.parse_since(args.since)
    except ValueError as err:
        raise TargetError(str(err)) from None
    client = report.Prometheus(prometheus_url(args.prometheus, settings))
    end = time.time()
    text = report.RENDERERS[args.output](report.collect(settings, name, client, end - window, end, args.step))
    if args.out:
        args.out.write_text(text if text.endswith("\n") else text + "\n")
        out.write(f"wrote {args.out}\n")
    else:
        out.write(text if text.endswith("\n") else text + "\n")
    return 0


def _monitoring(args: argparse.Namespace, out: TextIO) -> int:
    path = _stack_path(args)
    settings = load_stack(Path(path))
    name = args.stack if args.stack_file is None else Path(path).name.removeprefix("Pulumi.").removesuffix(".yaml")
    args.out.mkdir(parents=True, exist_ok=True)
    written = {
        "prometheusrule.yaml": yaml.safe_dump(alerts.prometheus_rule(settings, name), sort_keys=False),
        "rules.yaml": yaml.safe_dump(alerts.rules_file(settings, name), sort_keys=False),
        "dashboard.json": json.dumps(dashboard.dashboard(settings, name), indent=2, sort_keys=True) + "\n",
        "dashboard-configmap.yaml": yaml.safe_dump(dashboard.config_map(settings, name), sort_keys=False),
    }
    monitor = alerts.pod_monitor(settings, name)
    if monitor is not None:  # the trainer's own metrics (a stack with a trainingRuntime)
        written["podmonitor.yaml"] = yaml.safe_dump(monitor, sort_keys=False)
    for file_name, text in written.items():
        (args.out / file_name).write_text(text)
        out.write(f"wrote {args.out / file_name}\n")
    return 0


def status_view(api: k8s.ApiClient, cohorts: Optional[Iterable[str]] = None, latest: int = 10,
                output: str = "table", header: Optional[dict[str, Any]] = None, pretty: bool = True) -> str:
    """Read the cluster through ``api`` and return the status view as text.

    Args:
        api: a kubernetes ApiClient. cohorts: only these cohorts (None: every cohort). latest: preemptions per
        cohort. output: "table" or "json". header: fields shown first (table: "key value" pairs on one line; JSON:
        top-level keys). pretty: indent the JSON.
    Raises:
        ClusterUnreachable: the API server did not answer or ClusterQueues cannot be listed.
    ``cohorts_section`` is this view in ``kueue-cohorts sandbox status``.
    """
    view = build_view(read_snapshot(api), cohorts, latest)
    if output == "json":
        return json.dumps(as_json(view, header), indent=2 if pretty else None, sort_keys=False)
    line = " · ".join(f"{k} {v}" for k, v in (header or {}).items() if v is not None) or None
    return table(view, line)


def cohorts_section(api: k8s.ApiClient) -> str:
    """The cohorts view of every cohort on the cluster behind ``api`` (``status_view``, as a table), the part
    ``kueue-cohorts sandbox status`` shows after the components; a cluster that cannot be read gives the one line
    ``cohorts: <why>`` instead. Raises nothing of its own."""
    try:
        return status_view(api)
    except ClusterUnreachable as exc:
        return f"cohorts: {exc}"


def _settings_and_target(args: argparse.Namespace) -> tuple[Settings, Target, str]:
    path = _stack_path(args)
    settings = load_stack(Path(path))
    return settings, target_of(settings), (args.stack if args.stack_file is None else str(path))


def _status(args: argparse.Namespace, out: TextIO, sleep: Callable[[float], None]) -> int:
    settings, target, name = _settings_and_target(args)
    api = target.api_client()
    cohorts = None if args.all else [plan.cohort for plan in stack_plans(settings)]
    header = {"stack": name, "cluster": target.describe()}
    workers = [(w.name, worker_target(settings, w)) for w in (settings.multi_kueue.workers if settings.multi_kueue
                                                              else [])]
    worker_apis = [(n, t.api_client(), t) for n, t in workers]
    views = 0
    try:
        while True:
            text = status_view(api, cohorts, args.preemptions, args.output, header, pretty=not args.watch)
            for worker_name, worker_api, worker_t in worker_apis:  # MultiKueue: each worker's cohorts after
                text += "\n" + status_view(worker_api, cohorts, args.preemptions, args.output,
                                           {"stack": name, "worker": worker_name, "cluster": worker_t.describe()},
                                           pretty=not args.watch)
            if args.watch and args.output == "table" and out.isatty():
                out.write("\033[H\033[J")
            out.write(text + "\n")
            if args.watch and args.output == "table":
                out.write("\n")
            out.flush()
            views += 1
            if not args.watch or (args.count is not None and views >= args.count):
                return 0
            sleep(args.interval)
    except KeyboardInterrupt:
        return 0


def watch_verify(check: Callable[[], list[Difference]], out: TextIO, sleep: Callable[[float], None],
                 interval: float, count: Optional[int] = None, output: str = "table",
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> int:
    """``verify --watch``: run ``check`` every ``interval`` seconds and write each Difference when it first appears
    (``+``) and when it is gone (``-``), one line each with the UTC time (``output`` "json": one JSON object per line,
    ``{"time", "event": "found"|"resolved", "difference"}``).

    Args:
        check: one verify run. out: where to write. sleep: waits ``interval`` seconds. count: stop after this many
        checks (None: until Ctrl-C). clock: the time printed.
    Returns:
        1 when the last check found anything, else 0 (also after Ctrl-C).
    """
    current: dict[str, Difference] = {}
    checks = 0
    try:
        while True:
            found = {json.dumps(d.as_json(), sort_keys=True, default=str): d for d in check()}
            stamp = clock().strftime("%Y-%m-%dT%H:%M:%SZ")
            events = [("found", d) for k, d in found.items() if k not in current] + \
                     [("resolved", d) for k, d in current.items() if k not in found]
            for event, diff in events:
                if output == "json":
                    out.write(json.dumps({"time": stamp, "event": event, "difference": diff.as_json()},
                                         default=str) + "\n")
                else:
                    out.write(f"{stamp} {'+' if event == 'found' else '- resolved:'} {diff}\n")
            if checks == 0 and not found and output != "json":
                out.write(f"{stamp} the cluster matches the stack and keeps its promises\n")
            out.flush()
            current = found
            checks += 1
            if count is not None and checks >= count:
                break
            sleep(interval)
    except KeyboardInterrupt:
        pass
    return 1 if current else 0


def verify_workers(settings: Settings, grace: timedelta, stack: AssembledStack) -> list[Difference]:
    """``verify`` of every MultiKueue worker of `settings` (``WORKER_CHECKS`` against the objects the assembled
    `stack` registers there), each on its own cluster (``worker_target``). Raises TargetError when a worker's
    kubeconfig is unusable."""
    if settings.multi_kueue is None:
        return []
    expected = worker_expected(stack)
    out: list[Difference] = []
    for worker in settings.multi_kueue.workers:
        live = ClusterObjects(worker_target(settings, worker).api_client())
        out += verify(settings, live, expected[worker.name], WORKER_CHECKS, leak_grace=grace, worker=worker,
                      stack=stack)
    return out


def _verify(args: argparse.Namespace, out: TextIO, sleep: Callable[[float], None]) -> int:
    path = _stack_path(args)
    settings, stack = load_assembled(path)  # rendered once: every check of every round reads this stack
    target, name = target_of(settings), (args.stack if args.stack_file is None else str(path))
    live = ClusterObjects(target.api_client())
    grace = timedelta(seconds=args.leak_grace)

    def check() -> list[Difference]:
        return verify(settings, live, checks=LIVE_CHECKS, leak_grace=grace, stack=stack) + \
            verify_workers(settings, grace, stack)

    if args.watch:
        return watch_verify(check, out, sleep, args.interval, args.count, args.output)
    differences = check()
    if args.output == "json":
        out.write(json.dumps({"kind": "kueue-cohorts/verify/v1", "stack": name, "cluster": target.describe(),
                              "ok": not differences, "differences": [d.as_json() for d in differences]},
                             indent=2) + "\n")
    elif differences:
        out.write(f"stack {name} on {target.describe()}: {len(differences)} "
                  f"difference{'s' if len(differences) != 1 else ''}\n")
        out.write("".join(f"  - {d}\n" for d in differences))
    else:
        out.write(f"stack {name} on {target.describe()}: the cluster matches the stack\n")
    return 1 if differences else 0


def _trace(args: argparse.Namespace, out: TextIO) -> int:
    if args.trace_command == "synth":
        settings = load_stack(_stack_path(args))
        try:
            demand = synth_trace(settings, args.seed, args.days, args.step_minutes, args.training_per_day,
                                 args.tenant_per_day)
        except ValueError as exc:
            raise TargetError(str(exc)) from None
    else:
        settings, target, _ = _settings_and_target(args)
        kinds = queue_kinds((lq.namespace, lq.name, lq.cluster_queue.role)
                            for plan in stack_plans(settings) for lq in plan.local_queues)
        recorder = TraceRecorder(kinds, args.checkpoint_seconds)
        started = time.time()  # the trace's 0: it begins with what runs now
        end = watch_workloads(target.api_client(), args.seconds, recorder.observe, deleted=recorder.observe_deleted)
        demand = recorder.trace(end, started)
    if args.out:
        demand.write(args.out)
    else:
        write_trace(demand, out)
    return 0


def _live_state(args: argparse.Namespace) -> Trace:
    """What the stack's live cluster runs and queues now: its Workloads of the stack's LocalQueues, listed once
    (``watch_workloads`` for 0 s), as a Trace whose 0 is now (``TraceRecorder.trace``). Raises TargetError, the
    Kubernetes client's errors (the caller reports them as the cluster not answering)."""
    settings, target, _ = _settings_and_target(args)
    kinds = queue_kinds((lq.namespace, lq.name, lq.cluster_queue.role)
                        for plan in stack_plans(settings) for lq in plan.local_queues)
    recorder = TraceRecorder(kinds)
    now = time.time()
    return recorder.trace(watch_workloads(target.api_client(), 0.0, recorder.observe), now)


def _base_settings(repo: Path, ref: str, path: str) -> Optional[Settings]:
    """The stack's Settings at git `ref` (None when the file does not exist there). Raises TargetError."""
    try:
        doc = gitbase.stack_at(repo, ref, path)
        raw = None if doc is None else stackfile.project_config(doc, PROJECT)
    except (gitbase.GitError, StackFileError) as exc:
        raise TargetError(str(exc)) from None
    try:
        return None if raw is None else load_settings(raw)
    except SettingsError as err:
        raise TargetError(f"{ref}:{path}: {err}") from None


def _whatif(args: argparse.Namespace, out: TextIO) -> int:
    path = _stack_path(args)
    head = load_stack(path)
    if args.trace is None and not args.from_cluster:
        raise TargetError("whatif needs a demand: --trace FILE, --from-cluster (what the live cluster runs now), or "
                          "both")
    try:
        demand = Trace.read(args.trace) if args.trace is not None else Trace.build([], 1.0)
        if args.from_cluster:
            demand = demand.starting_from(_live_state(args))
    except TraceError as exc:
        raise TargetError(str(exc)) from None
    base = None
    if args.base:
        try:
            repo = gitbase.toplevel(args.repo)
            relative = str(path.resolve().relative_to(repo.resolve()))
        except (gitbase.GitError, ValueError) as exc:
            raise TargetError(f"--base needs the stack file inside the git work tree {args.repo}: {exc}") from None
        base = _base_settings(repo, args.base, relative)
    try:
        result = what_if(demand, head, base)
    except (Unsupported, TraceError) as exc:
        raise TargetError(str(exc)) from None
    title = f"{args.stack}: GPUs in use per ClusterQueue, base (dashed) and head"
    if args.chart:
        args.chart.parent.mkdir(parents=True, exist_ok=True)
        args.chart.write_text(chart_html(result.head, whatif_report(result.head).gpu, result.base, title))
    source = " + ".join([*(["the live cluster now"] if args.from_cluster else []),
                         *([str(args.trace)] if args.trace is not None else [])])
    text = section(result, source, args.base, str(args.chart) if args.chart else None)
    if args.output == "json":
        out.write(json.dumps(whatif_json(result, source, args.base), indent=2) + "\n")
    elif args.output == "html":
        out.write(chart_html(result.head, whatif_report(result.head).gpu, result.base, title, summary=text))
    else:
        out.write(text)
    return 1 if result.comparison.alerts else 0


def main(argv: Optional[list[str]] = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr,
         sleep: Callable[[float], None] = time.sleep) -> int:
    """Run the command line on ``argv`` (default sys.argv[1:]); write to ``out`` / ``err``. Returns the exit code
    (0 ok, 1 differences or cluster failure, 2 usage or config error); argparse exits 2 itself on bad usage."""
    return run(_parser().parse_args(argv), out, err, sleep)


def run(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr,
        sleep: Callable[[float], None] = time.sleep) -> int:
    """Run ``args.command`` (``args`` as ``add_arguments`` shapes it); write to ``out`` / ``err``. Returns the exit
    code (0 ok, 1 differences or cluster failure, 2 usage or config error)."""
    def body() -> int:
        if args.command == "status":
            return _status(args, out, sleep)
        if args.command == "trace":
            return _trace(args, out)
        if args.command == "whatif":
            return _whatif(args, out)
        if args.command == "report":
            return _report(args, out)
        if args.command == "monitoring":
            return _monitoring(args, out)
        return _verify(args, out, sleep)

    return guard("cohorts", body, verbose=args.verbose, what=args.command, err=err, known=[
        Known(TargetError, 2),
        Known((ClusterUnreachable, report.PrometheusUnreachable, report.PrometheusError), 1),
        Known((urllib3.exceptions.HTTPError, OSError), 1, "the API server did not answer: {exc}"),
        Known(k8s.ApiException, 1, "the API server refused: {exc.status} {exc.reason}")])
