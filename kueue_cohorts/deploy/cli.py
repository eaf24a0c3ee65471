"""``python -m kueue_cohorts.deploy up|preview|destroy|refresh|cancel|render --stack NAME``: the real pulumi CLI on one
stack.

Runs through deploy.engine (Automation API, inline program = the repo's __main__.py, pinned CLI and provider,
file backend outside the repo unless PULUMI_BACKEND_URL says otherwise). The policy pack in policy/ runs with
preview and up when it exists (``--no-policy`` turns it off, except on a protected stack).

Before any engine call: the stack file is read (deploy.stackfile); a protected stack (cluster mode kubeconfig, or
``kueue-cohorts:protected: true``) refuses a file backend, the dev passphrase and ``--no-policy``
(deploy.protection); a kubeconfig-mode stack checks its kubeconfig file, context and API server (deploy.preflight);
a lock of the file backend is reported, with ``cancel`` to clear it when its process is gone (deploy.locks).
``up`` first reconciles the pending operations of an interrupted run (deploy.recovery), then runs the engine once or
twice, as the program's own registrations decide (deploy.passes): a dry run of the program under the SDK's mocks
lists every resource it registers; when all came from the assembler, the settings check has judged exactly those
objects with the pack's rule book, and ``up`` is the update alone (the pack runs in it: each resource policy before
its resource is created, the stack policies at the end). When the program registers anything else (a resource added
to ``__main__.py`` by hand), when the dry run fails, or when the update lets the deploy identity through guardrails
that must be updated first (deploy.guardrails_first), ``up`` previews with the pack first and only then updates: the
Automation API's ``up`` skips the preview, and stack policies judge objects only after they were created. One line
says which and why (docs/performance.md, "up in one pass"). ``--no-policy`` runs the update alone. ``up`` and
``destroy`` refuse, before any change, while workloads hold a ClusterQueue (or ClusterQueues a ResourceFlavor) that
the run deletes, naming them and the ways out (deploy.queue_holders; docs/operations.md, "Queues in use").

``preview --pull-request FILE`` is the live preview of a pull request (.github/workflows/live-preview.yml): FILE, the
pull request's stack file, becomes ``stacks/Pulumi.<stack>.yaml`` with every key that selects a file, context,
program or credential source kept at the base's value, and a kubeconfig whose user runs a program is refused before
any is loaded (deploy.pullrequest).

``cancel`` removes the locks of the stack whose process no longer runs on this host; it never clears a lock of a
live process nor one written on another host.

``render --out DIR`` writes the stack's objects as YAML into DIR (0-crd/, 1-manifest/), with no cluster and without
the configured backend: a scratch copy of the project in render mode, applied into a throwaway file backend
(deploy.scratch). For GitOps users, and for the kinds the preview identity may read (components/model/preview_rbac.py).

A failed run ends with the engine's or the cluster's own error lines (deploy.errors), no Python traceback unless
``--verbose``. Exit codes: 0 success; 1 the command failed (engine error, cluster unreachable, stack locked,
interrupted); 2 usage or configuration error (unknown stack, invalid stack config: `preview` and `up` run the
program's settings check on the stack file before any engine call, protected-stack rule, kubeconfig file or context
missing, toolchain not built).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from kubernetes import config as k8s_config
from pulumi import automation as auto

from kueue_cohorts import toolchain
from kueue_cohorts.components.checks.validation import check_stack_file, load_stack_file
from kueue_cohorts.components.model.admission import layout_scopes
from kueue_cohorts.components.model.assembly import assemble
from kueue_cohorts.components.model.kueue import namespace_owner
from kueue_cohorts.components.model.render import RenderedStack, render_stack
from kueue_cohorts.components.settings import Settings, raw_from_stack_file
from kueue_cohorts.components.settings.errors import SettingsError, problems_message
from kueue_cohorts.components.settings.stackfile import StackFileError, stack_path
from kueue_cohorts.deploy import (
    engine,
    errors,
    guardrails_first,
    live_preflight,
    locks,
    passes,
    preflight,
    protection,
    pullrequest,
    queue_holders,
    recovery,
    rendered,
    settings,
    stackfile,
)
from kueue_cohorts.deploy.backend_url import redact
from kueue_cohorts.deploy.scratch import Project, manifests
from kueue_cohorts.sandbox.paths import kubeconfig_path
from kueue_cohorts.scaffold import Failure, Known, Tool, finish_quietly, guard

COMMANDS = ("up", "preview", "destroy", "refresh", "cancel", "render")


def check_settings(command: str, stack: str, path: Path) -> tuple[Settings, RenderedStack]:
    """The program's settings check on the stack file, before any engine call (``components.checks.validation``: shape,
    settings rules and the rule book on the rendered stack; a ``secure:`` value is a problem of its own).

    Returns: the stack's Settings and the RenderedStack judged (with the stack's ownership mark, as the program's),
    which the live preflight reads.
    Raises:
        Failure: exit code 2 with the one message that lists every problem (key path, value, rule, fix), as the
            program would raise it at the start of the engine run (which then never starts).
    """
    try:
        return check_stack_file(path, namespace_owner(engine.PROJECT_NAME, stack))
    except (SettingsError, StackFileError) as err:  # the one reader's errors: `file:line:col: message`
        raise Failure(2, f"deploy: {command} --stack {stack}: nothing was run: {err}") from None
    except (OSError, ValueError, yaml.YAMLError) as err:  # a file that cannot be read as a stack file
        raise Failure(2, f"deploy: {command} --stack {stack}: cannot read {path}: {err}") from None


def _sandbox_hint(stack: str, settings_: Settings | None) -> str | None:
    """Return a hint if ``stack`` (its checked ``settings_``, or None: read here, best effort) targets the sandbox and
    its kubeconfig is missing, else None."""
    if settings_ is None:
        try:
            settings_ = load_stack_file(stack_path(stack))
        except Exception:  # noqa: BLE001 - the engine run reports settings errors (refresh runs no check here)
            return None
    if settings_.cluster.mode == "sandbox" and not kubeconfig_path().exists():  # ClusterMode is a str Enum
        return (f"stack {stack!r} targets the local sandbox, which is not running ({kubeconfig_path()} is "
                f"missing): run `make sandbox-up STACK={stack}` first")
    return None


#: What each command does, in a user's words: ``kueue-cohorts COMMAND --help`` shows it (and ``python -m
# kueue_cohorts.deploy``).
HELP = {
    "up": ("pulumi up the stack with the policy pack (a preview first when the program registers more than the "
           "settings check judged)",
           "Apply the stack to its cluster, judged by the policy pack. When the program registers only the objects the "
           "settings check judged, the pack judges them during the update; when it registers anything else, a preview "
           "with the pack comes first and nothing changes when it finds a violation (one line says which, and why). "
           "Nothing changes while workloads hold a queue the run would delete (the message names them and the fix). "
           "A run that was interrupted is reconciled first."),
    "preview": ("pulumi preview of the stack with the policy pack",
                "Show what `up` would change on the stack's cluster, judged by the policy pack; nothing changes."),
    "destroy": ("delete every resource of the stack",
                "Delete every object of the stack from its cluster. Refused, before any change, while workloads hold "
                "a queue it deletes (the message names them and the fix)."),
    "refresh": ("read the live objects into the stack's state",
                "Read the stack's objects from its cluster into the stack's state (drift becomes visible to "
                "`preview`)."),
    "cancel": ("clear the lock of a run whose process is gone",
               "Remove the stack's lock left by an interrupted run on this host; a lock of a live run, or one written "
               "on another host, is kept."),
    "render": ("write the stack's objects as YAML (--out DIR), no cluster",
               "Write every object of the stack as YAML into DIR (0-crd/, 1-manifest/), for GitOps; needs no cluster "
               "and does not touch the stack's backend."),
}

#: The flags each command takes (besides --stack and --verbose); a flag a command does not take is a usage error.
FLAGS = {
    "up": ("--no-policy", "--expect-no-changes"),
    "preview": ("--no-policy", "--expect-no-changes", "--diff", "--pull-request"),
    "destroy": (),
    "refresh": (),
    "cancel": (),
    "render": ("--no-policy", "--out"),
}


def add_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    """Add the flags of ``command`` (one of COMMANDS) to ``parser`` and default every other flag of deploy, so that
    ``run`` reads one shape of Namespace (``command``, ``stack``, ``verbose``, ``no_policy``, ``expect_no_changes``,
    ``diff``, ``out``, ``pull_request``). Used by ``python -m kueue_cohorts.deploy COMMAND`` and
    ``kueue-cohorts COMMAND``."""
    parser.add_argument("--stack", default="dev", help="stack name: stacks/Pulumi.<stack>.yaml (default dev)")
    parser.add_argument("--verbose", action="store_true", help="show Python tracebacks and the engine's full error")
    flags = FLAGS[command]
    if "--no-policy" in flags:
        parser.add_argument("--no-policy", action="store_true",
                            help="do not run the policy pack in policy/ (refused for protected stacks)")
    if "--expect-no-changes" in flags:
        parser.add_argument("--expect-no-changes", action="store_true", help=f"fail if {command} would change anything")
    if "--diff" in flags:
        parser.add_argument("--diff", action="store_true",
                            help="show every changed property (default: one line per resource)")
    if "--out" in flags:
        parser.add_argument("--out", type=Path, metavar="DIR", required=True, help="the directory for the stack's YAML")
    if "--pull-request" in flags:
        parser.add_argument("--pull-request", type=Path, metavar="FILE",
                            help="the live preview of a pull request's stack file FILE (inside the repository): its "
                                 "kueue-cohorts config replaces stacks/Pulumi.<stack>.yaml, except every key that "
                                 "selects a file, context, program or credential, which keeps the base's value; every "
                                 "kubeconfig the run loads is refused if a user runs a program (deploy.pullrequest)")
    parser.set_defaults(command=command, no_policy=False, expect_no_changes=False, diff=False,
                        out=None, pull_request=None)


def _add_commands(parser: argparse.ArgumentParser) -> None:
    """One sub-parser per command of COMMANDS on ``parser`` (``python -m kueue_cohorts.deploy COMMAND``)."""
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(COMMANDS) + "}")
    for command in COMMANDS:
        summary, description = HELP[command]
        add_arguments(sub.add_parser(command, help=summary, description=description), command)


# --- before any engine call ------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Checked:
    """What the checks before any engine call found, for ``up`` to decide its passes (deploy.passes): the stack's
    Settings and RenderedStack judged by the settings check, and the live cluster the live preflight read (None when
    it read none)."""

    settings: Settings
    rendered: RenderedStack
    live: live_preflight.LiveCluster | None


def check_target(args: argparse.Namespace, environ: dict[str, str]) -> tuple[stackfile.StackTarget, Checked | None]:
    """Read the stack file and apply the protected-stack rules and the cluster preflight. Returns the target and, for
    preview and up, what the settings check judged (``Checked``). Raises Failure."""
    path = stack_path(args.stack)
    if not path.is_file():
        raise Failure(2, f"deploy: no stack file {path} (stacks/Pulumi.<stack>.yaml)")
    target = stackfile.read(args.stack, path)  # a StackFileError: exit 2 (run's guard)
    for problem in target.problems:
        print(f"deploy: warning: {problem}", file=sys.stderr)
    if target.warning:  # an explicit opt-out of protection: said on every run
        print(f"deploy: warning: {target.warning}", file=sys.stderr, flush=True)
    found = protection.problems(target, environ, no_policy=args.no_policy, policy_pack=engine.policy_pack_dir())
    if found:
        raise Failure(2, f"deploy: {protection.message(target, found)}")
    checked = check_settings(args.command, args.stack, path) if args.command in ("up", "preview") else None
    if args.command in ("up", "preview", "refresh"):
        hint = _sandbox_hint(args.stack, checked[0] if checked else None)
        if hint:
            raise Failure(1, f"deploy: {hint}")
    if args.command != "cancel":
        failure = preflight.check(target, environ)
        if failure:
            raise Failure(2 if failure.usage else 1, f"deploy: {failure.line}")
    if checked is None:
        return target, None
    return target, Checked(*checked, check_live(args, target, environ, *checked, path))


def take_pull_request(args: argparse.Namespace, environ: dict[str, str]) -> None:
    """``--pull-request FILE`` (preview only): make the stack file the pull request's, with every selecting key
    pinned to the base's, and refuse before any kubeconfig is loaded what the run would load and should not
    (deploy.pullrequest.prepare). Prints one line per key the pull request changed and the preview ignores.

    Raises:
        Failure: exit code 2, another command than preview, or every problem deploy.pullrequest found.
    """
    if args.command != "preview":
        raise Failure(2, f"deploy: --pull-request is for preview only, not {args.command}")
    try:
        notes = pullrequest.prepare(args.stack, args.pull_request, stack_path(args.stack).parents[1],
                                    environ)
    except pullrequest.PullRequestError as err:
        raise Failure(2, f"deploy: preview --stack {args.stack} --pull-request {args.pull_request}: nothing was "
                         "loaded or run:", *(f"  {line}" for line in err.lines)) from None
    for note in notes:
        print(f"deploy: {note}", file=sys.stderr, flush=True)


def check_live(args: argparse.Namespace, target: stackfile.StackTarget, environ: dict[str, str], checked: Settings,
               rendered: RenderedStack, path: Path) -> live_preflight.LiveCluster | None:
    """``preview`` and ``up``: the stack's rendered objects against its live cluster, before any engine call
    (deploy.live_preflight: capacity of the live nodes, neighbours' quota on them, the checkpoint StorageClass, the
    kubeconfig's identity against ``admission.identities``). Warnings are printed; nothing is read for a render-mode
    stack or one whose kubeconfig or context is a secret.

    Returns: the live cluster read (None when none was read).
    Raises:
        Failure: exit code 2, one message listing every refusal (key, value, rule, fix); nothing was run.
    """
    readable, kubeconfig = cluster_kubeconfig(target, environ)
    if not readable or any(k.endswith((".kubeconfig", ".context")) for k in target.secret_keys):
        return None
    try:
        live = live_preflight.read(kubeconfig, target.context)
    except Exception as err:  # noqa: BLE001 - no client from the kubeconfig: the engine's run says it its way
        print(f"deploy: warning: the live preflight could not read the cluster ({type(err).__name__}: {err})",
              flush=True)
        return None
    found = live_preflight.judge(checked, raw_from_stack_file(path), rendered, live)
    for line in found.warnings:  # on stdout, with the run's own output: stderr is for what stops the run
        print(f"deploy: warning: {line}", flush=True)
    if found.problems:
        raise Failure(2, f"deploy: {args.command} --stack {args.stack}: nothing was run: "
                         + problems_message("live preflight", found.problems, " on the stack's cluster"))
    return live


def check_locks(args: argparse.Namespace, backend_url: str) -> None:
    """Refuse to start while the stack is locked in the file backend, saying whose lock it is and what to do."""
    directory = locks.backend_dir(backend_url)
    if directory is None:
        return  # other backends: the engine reports its own lock error (and its advice)
    held = locks.read_locks(directory, engine.PROJECT_NAME, args.stack)
    if not held:
        return
    lines = [f"deploy: stack {args.stack!r} is locked by {len(held)} earlier run(s):"]
    lines += [f"  {lock.describe()}" for lock in held]
    if all(lock.holder is locks.Holder.GONE for lock in held):
        lines.append(f"deploy: that run was interrupted. Fix: `kueue-cohorts cancel --stack {args.stack}` "
                     f"clears the lock, then run `kueue-cohorts {args.command} --stack {args.stack}` again "
                     "(docs/operations.md, \"After an interrupted run\")")
    elif any(lock.holder is locks.Holder.LIVE for lock in held):
        lines.append("deploy: another run of this stack is in progress: wait for it to end")
    else:
        lines.append("deploy: the lock was written on another host: if no run is in progress there, clear it with "
                     f"`pulumi cancel --stack {args.stack}` (the engine's own advice)")
    raise Failure(1, *lines)


SANDBOX_MODE = "sandbox"


def cluster_kubeconfig(target: stackfile.StackTarget, environ: dict[str, str]) -> tuple[bool, str | None]:
    """Whether ``target`` has a cluster to read (cluster mode sandbox or kubeconfig), and the kubeconfig to read it
    with: the sandbox's, else the files the provider would read (``preflight.kubeconfig_files``, those that exist,
    joined with ``os.pathsep`` as the client merges them; None: the client's default)."""
    if target.mode == SANDBOX_MODE:
        return True, str(kubeconfig_path())
    if target.mode != stackfile.KUBECONFIG_MODE:
        return False, None
    files = [str(f) for f in preflight.kubeconfig_files(target, environ) if f.is_file()]
    return True, os.pathsep.join(files) or None


Live = queue_holders.Live
"""The live ClusterQueues, Workloads and TrainJobs (deploy.queue_holders.read)."""


def read_live(args: argparse.Namespace, target: stackfile.StackTarget, environ: dict[str, str]) -> Live | None:
    """The cluster's ClusterQueues, Workloads and TrainJobs (one bounded read, deploy.queue_holders.read), or None
    when the stack has no cluster to read or it cannot be read (said in one line: the run goes on, its deletes are
    bounded by components/model/kueue.py RELEASE_WAIT_S)."""
    readable, kubeconfig = cluster_kubeconfig(target, environ)
    if not readable:
        return None
    try:
        return queue_holders.read(kubeconfig, target.context)
    except Exception as err:  # noqa: BLE001 - any failure: we cannot tell; the engine's delete is bounded
        print(f"deploy: could not check what holds the Kueue objects this {args.command} deletes "
              f"({type(err).__name__}); going on", flush=True)
        return None


def check_queue_holders(args: argparse.Namespace, target: stackfile.StackTarget, environ: dict[str, str],
                        steps: queue_holders.Steps, live: Live | None = None) -> None:
    """Before the engine's ``up`` or ``destroy``: refuse, naming them, while something holds a ClusterQueue or
    ResourceFlavor that ``steps`` (the run's preview, deploy.queue_holders.deletions) delete: Kueue would keep the
    object and the engine would wait for it (deploy.queue_holders). Nothing is read when the run deletes none; else
    ``live`` (default: ``read_live``, two lists of 15 s at most).

    Raises:
        Failure: exit code 1 with deploy.queue_holders.message (what holds each object, and the ways out).
    """
    if not any(d.kind in queue_holders.FINALIZED_KINDS for d in steps.deleted):
        return
    live = live if live is not None else read_live(args, target, environ)
    if live is None:
        return
    held = queue_holders.holders(steps, *live)
    if held:
        raise Failure(1, *queue_holders.message(args.command, args.stack, held))


def state_deletions(stack: auto.Stack, output: list[str]) -> queue_holders.Steps:
    """What a destroy of ``stack``'s state would delete: the steps of ``preview_destroy`` (the engine reads the state,
    runs no program; its output goes to ``output`` only)."""
    events: list[auto.EngineEvent] = []
    quiet = {**engine.run_kwargs(stack, policy=False, operation="destroy"), "on_output": output.append}
    stack.preview_destroy(on_event=events.append, **quiet)
    return queue_holders.deletions(events)


def check_up_holders(args: argparse.Namespace, target: stackfile.StackTarget, environ: dict[str, str],
                     stack: auto.Stack, kwargs: dict[str, Any], output: list[str]) -> None:
    """Before an ``up`` in one pass: refuse while something holds a ClusterQueue or ResourceFlavor the update deletes
    (``check_queue_holders``), at the cost of a preview only when it can matter. An update can delete only what the
    state holds, so first the state's queue objects (``state_deletions``) are judged against the live cluster (one
    bounded read): when none is held, the update goes on in one pass; when one is, the update's own preview (with the
    policy pack as the run has it) says which objects it deletes, and those are judged.

    Raises:
        Failure: as check_queue_holders; auto.CommandError from the engine's preview.
    """
    if not cluster_kubeconfig(target, environ)[0]:
        return  # render mode: no cluster, nothing waits
    superset = state_deletions(stack, output)
    if not any(d.kind in queue_holders.FINALIZED_KINDS for d in superset.deleted):
        return
    live = read_live(args, target, environ)
    if live is None or not queue_holders.holders(superset, *live):
        return
    print("deploy: workloads hold Kueue objects of the stack: preview before up, to see whether the update deletes "
          "one of them", flush=True)
    events: list[auto.EngineEvent] = []
    stack.preview(on_event=events.append, **kwargs)
    check_queue_holders(args, target, environ, queue_holders.deletions(events), live)


def update_guardrails_first(args: argparse.Namespace, target: stackfile.StackTarget, environ: dict[str, str],
                            stack: auto.Stack, events: list[auto.EngineEvent], kwargs: dict[str, Any]) -> None:
    """Before the update: when the preview's ``events`` update guardrails to let the deploy identity through
    (deploy.guardrails_first.gated_updates; the identity from one SelfSubjectReview), update those policies first
    (``up --target``), then wait, bounded, until the API server admits a dry run of the write they guard on each
    stack namespace that carries a tenant label (deploy.guardrails_first.settle). Nothing is done when the cluster or
    the identity cannot be read: the update then runs as it would have."""
    readable, kubeconfig = cluster_kubeconfig(target, environ)
    if not readable:
        return
    try:
        api = k8s_config.new_client_from_config(config_file=kubeconfig, context=target.context)
        who = live_preflight.review_identity(api)
    except Exception:  # noqa: BLE001 - the live preflight said it already; nothing to order then
        return
    urns = guardrails_first.gated_updates(events, who)
    if not urns:
        return
    print(f"deploy: this up lets {who.username} through {len(urns)} guardrail(s): updating them first, so that the "
          "stack's own writes are judged by the new ones", flush=True)
    stack.up(target=urns, target_dependents=False, **kwargs)
    checked = load_stack_file(stack_path(args.stack))
    labels = {scope.tenant_label for scope in layout_scopes(checked)}
    pairs = [(item.name, key) for item in render_stack(checked, namespace_owner(engine.PROJECT_NAME, args.stack))
             if item.kind == "Namespace" for key in (item.manifest.get("metadata") or {}).get("labels") or {}
             if key in labels]
    start = time.monotonic()
    for namespace, label in guardrails_first.targets(pairs):
        left = guardrails_first.settle(functools.partial(guardrails_first.probe, api, namespace, label))
        if left is not None:
            print(f"deploy: warning: the API server still refuses {who.username} to change the label {label} of "
                  f"namespace {namespace} after {guardrails_first.SETTLE_S:g} s ({left}); the update goes on",
                  flush=True)
            return
    print(f"deploy: the updated guardrails are in force ({time.monotonic() - start:.1f} s)", flush=True)


def explain_release_timeout(args: argparse.Namespace, target: stackfile.StackTarget, environ: dict[str, str],
                            events: list[auto.EngineEvent]) -> list[str]:
    """The lines that explain a failed run whose engine ``events`` show a delete of a ClusterQueue or ResourceFlavor
    that did not finish (deploy.queue_holders.unreleased: the bounded wait ran out): the bounded wait, then what holds
    each object now and the ways out (one bounded read; left out when the cluster cannot be read). Empty for any
    other failure."""
    gone = queue_holders.unreleased(events)
    if not gone:
        return []
    lines = [queue_holders.timeout_line(args.command, gone)]
    readable, kubeconfig = cluster_kubeconfig(target, environ)
    if readable:
        try:
            live = queue_holders.read(kubeconfig, target.context)
        except Exception:  # noqa: BLE001 - the timeout line stands alone
            return lines
        held = queue_holders.holders(queue_holders.Steps(tuple(gone)), *live)
        if held:
            lines += queue_holders.timeout_message(args.command, held)
    return lines


class Changes:
    """What a run has begun to change, for the message of an interrupted run (Ctrl-C): ``what`` stays None until the
    run starts to change the cluster, the stack's state, its lock files or the render directory, then names it."""

    def __init__(self) -> None:
        self.what: str | None = None

    def start(self, what: str) -> None:
        """Record that the run now changes ``what`` (e.g. ``"the cluster and the state of stack 'dev'"``)."""
        self.what = self.what or what


def interrupted_lines(args: argparse.Namespace, changes: Changes) -> list[str]:
    """The message of a run of ``args.command`` interrupted (Ctrl-C) after ``changes``: "interrupted before any
    change" while nothing was begun (the checks, the preview, the preview before an update), else what may have
    changed and the commands that finish the job (cancel a remaining lock, run the command again)."""
    cancel_hint = f"if a lock remains, `kueue-cohorts cancel --stack {args.stack}` clears it"
    if changes.what is None:
        return [f"deploy: {args.command} --stack {args.stack} interrupted before any change: nothing was changed; "
                f"{cancel_hint}"]
    return [f"deploy: {args.command} --stack {args.stack} interrupted while it changed {changes.what}: some changes "
            f"may have been made; {cancel_hint}, then run `kueue-cohorts {args.command} --stack {args.stack}` again "
            "(it reconciles the interrupted run first; docs/operations.md, \"After an interrupted run\")"]


def cancel(args: argparse.Namespace, backend_url: str, changes: Changes | None = None) -> int:
    """``cancel``: delete the stack's lock files whose process is gone from this host (what the engine's ``pulumi
    cancel`` does, lock by lock); refuse if a lock is live or from another host, or for a non-file backend."""
    directory = locks.backend_dir(backend_url)
    if directory is None:
        raise Failure(1, f"deploy: stack {args.stack!r} is in the backend {redact(backend_url)}, whose locks this "
                         f"command cannot check: if no run is in progress, `pulumi cancel --stack {args.stack}` clears "
                         "them (the engine's own advice)")
    held = locks.read_locks(directory, engine.PROJECT_NAME, args.stack)
    if not held:
        print(f"deploy: stack {args.stack!r} is not locked")
        return 0
    kept = [lock for lock in held if lock.holder is not locks.Holder.GONE]
    if kept:
        raise Failure(1, f"deploy: not clearing the locks of stack {args.stack!r}: "
                         f"{len(kept)} may belong to a running process:",
                      *[f"  {lock.describe()}" for lock in kept])
    if changes is not None:
        changes.start(f"the lock files of stack {args.stack!r}")
    for lock in held:
        lock.path.unlink(missing_ok=True)
        print(f"deploy: cleared the stale lock of {lock.describe()}")
    return 0


# --- the engine run --------------------------------------------------------------------------------------------------


PREVIEW_FIRST = "deploy: preview with the policy pack before up"
"""Printed before the preview of an ``up`` in two passes (deploy.passes)."""

UP_STARTS = "deploy: up starts (changes from here on)"
"""Printed right before the engine's `up`: what follows may change the cluster (the preview before it does not)."""


ROUND_TRIP = "examples/round-trip/trainjob.yaml"
"""The first object of the round trip of docs/operations.md ("Round trip")."""


def next_commands(target: stackfile.StackTarget, environ: dict[str, str]) -> list[str]:
    """The three commands to run after a successful ``up`` of ``target``, as lines to print (``make up`` ends with
    them): on the sandbox, point kubectl at it (its kubeconfig under ``$KUEUE_COHORTS_SANDBOX_DIR``), look at the
    cohorts, start the round trip of docs/operations.md; on a kubeconfig cluster, check it, look at the cohorts, write
    the monitoring files. Empty otherwise (render mode: the files are the result)."""
    stack = target.name
    if target.mode == SANDBOX_MODE:
        return [f"export KUBECONFIG={kubeconfig_path(environ)}",
                f"kueue-cohorts status --stack {stack}",
                f"kubectl apply -f {ROUND_TRIP}   # the round trip: docs/operations.md, \"Round trip\""]
    if target.mode == stackfile.KUBECONFIG_MODE:
        return [f"kueue-cohorts verify --stack {stack}", f"kueue-cohorts status --stack {stack}",
                f"kueue-cohorts monitoring --stack {stack} --out monitoring/   # alerts and dashboard "
                "(docs/monitoring.md)"]
    return []


VAP_KIND = "ValidatingAdmissionPolicy"
"""The kind of the guardrails' policies in ``live_preflight.LiveCluster.unreadable``."""


def up_passes(args: argparse.Namespace, stack: auto.Stack, checked: Checked | None) -> passes.Decision:
    """How many engine passes this ``up`` runs (deploy.passes): two when the program registers anything the assembler
    did not build (or its dry run fails), or when the update lets the deploy identity through guardrails that must be
    updated first (``guardrails_first.gated_live`` on the live preflight's read: their URNs come from the preview's
    steps), or when that read knows the identity but could not list the guardrails; else one. ``--no-policy``: one
    (no pack, nothing to judge first). ``checked``: what the settings check judged (None: two passes, nothing to
    compare with)."""
    if args.no_policy:
        return passes.Decision(1, "--no-policy: the update alone, without the policy pack")
    if checked is None:
        return passes.Decision(2, "the settings check's objects are not at hand, so the preview with the policy pack "
                                  "comes first")
    assembled = assemble(checked.settings, namespace_owner(engine.PROJECT_NAME, args.stack), checked.rendered)
    live = checked.live
    if live is not None and live.identity is not None and VAP_KIND in live.unreadable:
        return passes.Decision(2, f"the live guardrails could not be read ({live.unreadable[VAP_KIND]}), so the "
                                  "preview with the policy pack comes first (its steps say which to update first)")
    gated = guardrails_first.gated_live([rail.policy.manifest for rail in assembled.guardrails],
                                        live.admission_policies if live else [], live.identity if live else None)
    if gated:
        return passes.Decision(2, f"the update lets {live.identity.username if live and live.identity else ''} "
                                  f"through {len(gated)} guardrail(s) ({', '.join(gated)}) that are updated first, "
                                  "as the preview's steps say")
    program = stack.workspace.program
    if program is None:
        return passes.Decision(2, "the stack runs no inline program to dry-run, so the preview with the policy pack "
                                  "comes first")
    return passes.decide(program, engine.PROJECT_NAME, args.stack,
                         stack_path(args.stack, Path(stack.workspace.work_dir)), assembled)


def run_engine(args: argparse.Namespace, target: stackfile.StackTarget, environ: dict[str, str],
               echo: Callable[[str], None], changes: Changes | None = None, checked: Checked | None = None) -> int:
    """Open the stack, reconcile an interrupted run before ``up``, run the command. Raises Failure.

    ``up`` runs the engine once or twice as ``up_passes`` decides (``checked``: what the settings check judged), and
    prints that decision. Before ``destroy`` and ``up``, ``check_queue_holders`` refuses while something holds a
    ClusterQueue or ResourceFlavor the run deletes, as the engine's preview steps say (``destroy``:
    ``preview_destroy``; ``up``: the preview before the update, or ``check_up_holders`` in one pass). ``changes``
    records when the run begins to change the cluster or the state (for the message of an interrupted run)."""
    changes = changes or Changes()
    cluster_and_state = f"the cluster and the state of stack {args.stack!r}"
    output: list[str] = []
    events: list[auto.EngineEvent] = []

    def on_output(line: str) -> None:
        output.append(line)
        echo(line)

    try:
        print(f"deploy: {engine.environment_summary()}", flush=True)
        stack = engine.open_stack(args.stack)
    except auto.CommandError as exc:
        raise _engine_failure(args, f"opening stack {args.stack}", errors.command_output(exc)) from None

    kwargs = engine.run_kwargs(stack, policy=not args.no_policy, on_output=on_output, operation=args.command)
    start = time.monotonic()
    try:
        if args.command == "up":
            done = recovery.reconcile(stack, kwargs["config_file"], on_output, on_change=lambda: changes.start(
                f"the state of stack {args.stack!r} (reconciling an interrupted run)"))
            for line in done.lines() if done else []:
                print(f"deploy: {line}", flush=True)
        if args.command == "preview":
            # Compact by default (one line per resource, as `pulumi preview`); --diff: every changed property.
            stack.preview(diff=args.diff or None, expect_no_changes=args.expect_no_changes or None, **kwargs)
        elif args.command == "up":
            decision = up_passes(args, stack, checked)
            for line in decision.lines():
                print(f"deploy: {line}", flush=True)
            if decision.passes == 2:
                # The Automation API runs `pulumi up --skip-preview`, where stack policies see the objects only after
                # they were created: preview with the pack first, so a mandatory violation stops `up` before any
                # change (it costs one more engine run, see the module doc). Its steps also say which Kueue objects
                # the update deletes (issue 28 finding 10) and which guardrails to update first.
                print(PREVIEW_FIRST, flush=True)
                stack.preview(on_event=events.append, **kwargs)
                check_queue_holders(args, target, environ, queue_holders.deletions(events))
                update_guardrails_first(args, target, environ, stack, events, kwargs)
            else:
                check_up_holders(args, target, environ, stack, kwargs, output)
            print(UP_STARTS, flush=True)
            changes.start(cluster_and_state)
            events.clear()
            stack.up(expect_no_changes=args.expect_no_changes or None, on_event=events.append, **kwargs)
        elif args.command == "refresh":
            changes.start(f"the state of stack {args.stack!r}")
            stack.refresh(**kwargs)
        else:
            if cluster_kubeconfig(target, environ)[0]:  # render mode: no cluster, nothing waits
                check_queue_holders(args, target, environ, state_deletions(stack, output))
            events.clear()
            changes.start(cluster_and_state)
            stack.destroy(on_event=events.append, **kwargs)
    except auto.CommandError as exc:
        failure = _engine_failure(args, args.command, errors.command_output(exc))
        raise Failure(failure.code, *failure.lines, *explain_release_timeout(args, target, environ, events)) from None
    print(f"deploy: pulumi {args.command} --stack {args.stack} done in {time.monotonic() - start:.1f} s")
    if args.command == "up":
        lines = next_commands(target, environ)
        if lines:
            print("deploy: next:", *[f"  {line}" for line in lines], sep="\n")
    return 0


def render(args: argparse.Namespace, echo: Callable[[str], None], changes: Changes | None = None) -> int:
    """``render``: ``pulumi up`` of a scratch copy of the stack in render mode into ``--out`` (see the module doc)."""
    if args.out is None:
        raise Failure(2, "deploy: render needs --out DIR")
    if not stack_path(args.stack).is_file():
        raise Failure(2, f"deploy: no stack file {stack_path(args.stack)}")
    out = args.out.resolve()
    try:
        previous = rendered.previous_files(out)
    except rendered.RenderDirError as err:
        raise Failure(2, f"deploy: render --out {args.out}: nothing was run: {err}") from None
    output: list[str] = []

    def on_output(line: str) -> None:
        output.append(line)
        echo(line)

    with tempfile.TemporaryDirectory(prefix="kueue-cohorts-render-") as tmp:
        project = Project(Path(tmp))
        fresh = Path(tmp) / "rendered"
        project.make_offline(args.stack, fresh)
        try:
            stack = project.open(args.stack)
            stack.up(**engine.run_kwargs(stack, policy=not args.no_policy, on_output=on_output))
        except auto.CommandError as exc:
            raise _engine_failure(args, "up (render)", errors.command_output(exc)) from None
        count = len(manifests(fresh))
        if changes is not None:
            changes.start(f"the render directory {out}")
        removed = rendered.replace(out, fresh, previous)
    stale = f"; {removed} stale file(s) of the previous render removed" if removed else ""
    print(f"deploy: rendered {count} objects of stack {args.stack} into {out}{stale}")
    return 0


def _engine_failure(args: argparse.Namespace, what: str, output: list[str]) -> Failure:
    """The Failure of a failed engine command whose whole output (stdout then stderr) is ``output``: the engine's
    own error lines first (see deploy.errors), the whole output after them with ``--verbose``."""
    found = errors.error_lines(output)
    if not found:
        found = [line for line in errors.without_tracebacks(output) if line.strip()][-10:]
    lines = [f"deploy: pulumi {what} --stack {args.stack} failed:", *[f"  {line}" for line in found]]
    lines += [f"  why the policy pack did not start: {reason}" for reason in errors.pack_start_reasons(output)]
    if any("currently locked" in line for line in output):
        lines.append("deploy: the lock is held in the backend: if no run is in progress, "
                     f"`pulumi cancel --stack {args.stack}` clears it (the engine's own advice)")
    if args.verbose:
        lines += ["deploy: the engine's full output:", *output]
    return Failure(1, *lines)


def run(args: argparse.Namespace) -> int:
    """Run ``args.command`` on the stack (``args`` as ``add_arguments`` shapes it), stream the engine's output;
    return the exit code (module doc). Failures print as ``kueue_cohorts.scaffold.guard`` says; Ctrl-C says what the
    run had begun to change."""
    # A closed stdout (`deploy up | head`) stops the printing, never the run (kueue_cohorts.scaffold).
    echo = finish_quietly((lambda line: print(line, flush=True)) if args.verbose else _quiet_tracebacks())
    changes = Changes()

    def body() -> int:
        if args.command == "render":
            return render(args, echo, changes)
        environ = dict(os.environ)
        if args.pull_request is not None:
            take_pull_request(args, environ)
        target, checked = check_target(args, environ)
        backend_url = settings.backend_url(environ)
        if args.command == "cancel":
            return cancel(args, backend_url, changes)
        check_locks(args, backend_url)
        return run_engine(args, target, environ, echo, changes, checked)

    return guard("deploy", body, verbose=args.verbose, what=f"{args.command} --stack {args.stack}",
                 known=[Known((StackFileError, toolchain.ToolchainError), 2)],
                 interrupted=lambda: interrupted_lines(args, changes))


def _quiet_tracebacks() -> Callable[[str], None]:
    """Return an echo for the engine's streamed output that leaves out Python tracebacks and gRPC plumbing
    (errors.TracebackFilter; ``--verbose`` shows everything)."""
    keep = errors.TracebackFilter().keep
    return lambda line: print(line, flush=True) if keep(line) else None


#: ``python -m kueue_cohorts.deploy COMMAND FLAGS``: the same commands as ``kueue-cohorts COMMAND``.
TOOL = Tool("python -m kueue_cohorts.deploy",
            "Run one command of the real pulumi CLI on one stack (the same as `kueue-cohorts "
            "COMMAND`).", _add_commands, run)
main = TOOL.main
