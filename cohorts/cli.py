"""Command line: ``python -m cohorts status|verify [--stack NAME]``.

Exit codes: 0 ok; 1 differences (verify) or the cluster did not answer; 2 usage or config error (bad arguments,
missing or invalid stack file, a stack in render mode, a missing kubeconfig). User errors print one message, no
traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, TextIO

import urllib3
from kubernetes import client as k8s

from cohorts.live import ClusterUnreachable, read_snapshot
from cohorts.render import as_json, table
from cohorts.target import Target, TargetError, load_stack, stack_file, target_of
from cohorts.verify import ClusterObjects, verify
from cohorts.view import build_view
from components.plans import stack_plans


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


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m cohorts", description=(
        "Kueue cohorts of a kueue-cohorts stack on its live cluster (the sandbox, or the stack's kubeconfig and "
        "context). Exit codes: 0 ok, 1 differences or cluster failure, 2 usage or config error."))
    sub = p.add_subparsers(dest="command", required=True, metavar="{status,verify}")

    def stack_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--stack", default="dev", help="stack name: stacks/Pulumi.<stack>.yaml (default dev)")
        sp.add_argument("--stack-file", type=Path, help="a stack file outside stacks/ (overrides --stack)")
        sp.add_argument("--output", "-o", choices=("table", "json"), default="table", help="default table")

    st = sub.add_parser("status", help="per cohort, ClusterQueue and resource: quotas, usage, borrowed, lent; "
                                       "Workloads; latest preemptions",
                        description="Per cohort, ClusterQueue and resource: nominalQuota, borrowingLimit, "
                                    "lendingLimit, usage, borrowed, lent; the admitted and pending Workloads; the "
                                    "latest preemptions with reason, victim, preemptor and time.")
    stack_args(st)
    st.add_argument("--all", action="store_true", help="every cohort on the cluster, not only the stack's")
    st.add_argument("--preemptions", type=_positive_int, default=10, metavar="N",
                    help="latest preemptions per cohort (default 10)")
    st.add_argument("--watch", "-w", action="store_true", help="refresh until Ctrl-C (or --count refreshes)")
    st.add_argument("--interval", type=_positive_float, default=2.0, metavar="SECONDS",
                    help="seconds between refreshes with --watch (default 2)")
    st.add_argument("--count", type=_positive_int, metavar="N", help="with --watch: stop after N views")

    vf = sub.add_parser("verify", help="compare the live cluster with the stack; exit 1 with the differences",
                        description="Compare the live cluster with the stack's rendered objects: every object "
                                    "present with its rendered fields equal, the inference ClusterQueue never "
                                    "borrowing, every LocalQueue's namespace selected, admission policies bound. "
                                    "Exit 1 with the list of differences (kind, name, field path).")
    stack_args(vf)
    return p


def status_view(api: k8s.ApiClient, cohorts: Optional[Iterable[str]] = None, latest: int = 10,
                output: str = "table", header: Optional[dict[str, Any]] = None, pretty: bool = True) -> str:
    """Read the cluster through ``api`` and return the status view as text.

    Args:
        api: a kubernetes ApiClient. cohorts: only these cohorts (None: every cohort). latest: preemptions per
        cohort. output: "table" or "json". header: fields shown first (table: "key value" pairs on one line; JSON:
        top-level keys). pretty: indent the JSON.
    Raises:
        ClusterUnreachable: the API server did not answer or ClusterQueues cannot be listed.
    This is also the cohort part of ``python -m sandbox status``.
    """
    view = build_view(read_snapshot(api), cohorts, latest)
    if output == "json":
        return json.dumps(as_json(view, header), indent=2 if pretty else None, sort_keys=False)
    line = " · ".join(f"{k} {v}" for k, v in (header or {}).items() if v is not None) or None
    return table(view, line)


def _settings_and_target(args) -> tuple[Any, Target, str]:
    path = args.stack_file or stack_file(args.stack)
    settings = load_stack(Path(path))
    return settings, target_of(settings), (args.stack if args.stack_file is None else str(path))


def _status(args, out: TextIO, sleep: Callable[[float], None]) -> int:
    settings, target, name = _settings_and_target(args)
    api = target.api_client()
    cohorts = None if args.all else [plan.cohort for plan in stack_plans(settings)]
    header = {"stack": name, "cluster": target.describe()}
    views = 0
    try:
        while True:
            text = status_view(api, cohorts, args.preemptions, args.output, header, pretty=not args.watch)
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


def _verify(args, out: TextIO) -> int:
    settings, target, name = _settings_and_target(args)
    live = ClusterObjects(target.api_client())
    differences = verify(settings, live)
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


def main(argv: Optional[list[str]] = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr,
         sleep: Callable[[float], None] = time.sleep) -> int:
    """Run the command line on ``argv`` (default sys.argv[1:]); write to ``out`` / ``err``. Returns the exit code
    (0 ok, 1 differences or cluster failure, 2 usage or config error); argparse exits 2 itself on bad usage."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "status":
            return _status(args, out, sleep)
        return _verify(args, out)
    except BrokenPipeError:
        raise  # the reader went away: the entry point ends quietly (kueue_cohorts.pipes)
    except TargetError as exc:
        err.write(f"cohorts: {exc}\n")
        return 2
    except ClusterUnreachable as exc:
        err.write(f"cohorts: {exc}\n")
        return 1
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        err.write(f"cohorts: the API server did not answer: {exc}\n")
        return 1
    except k8s.ApiException as exc:
        err.write(f"cohorts: the API server refused: {exc.status} {exc.reason}\n")
        return 1
