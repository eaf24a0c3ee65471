"""``kueue-cohorts``: one command for every tool of the project, with shared flags.

    kueue-cohorts [--version] COMMAND [--stack NAME] [--output table|json] [--verbose] [--yes] [TOOL FLAGS ...]

| command | runs | what it does |
|---|---|---|
| ``up`` | ``python -m deploy up`` | shows the plan (a preview, policy pack on), asks unless ``--yes``, then updates |
| ``preview`` | ``python -m deploy preview`` | the plan, with the policy pack |
| ``destroy`` | ``python -m deploy destroy`` | asks, unless ``--yes``; then deletes every resource of the stack |
| ``refresh``, ``cancel``, ``render`` | ``python -m deploy ...`` | state refresh, clear a dead run's lock, YAML out |
| ``init`` | kueue_cohorts.newstack | a new stack file from a template stack (``--from``), its own encryption salt |
| ``validate`` | ``python -m kueue_cohorts.validate`` | the settings check of a stack file, no engine |
| ``status``, ``verify`` | ``python -m cohorts ...`` | the stack's cohorts on its live cluster |
| ``report``, ``monitoring`` | ``python -m cohorts ...`` | GPU-hours from Prometheus; the stack's alerts and dashboard |
| ``trace``, ``whatif`` | ``python -m cohorts ...`` | a demand trace (``synth``, ``record``); its replay on the quotas |
| ``sandbox`` | ``python -m sandbox ...`` | the local control plane: ``up``, ``down``, ``status``, ``logs`` |
| ``pr-summary`` | ``python -m prsummary`` | the pull-request summary of one stack |
| ``toolchain`` | ``python -m toolchain ...`` | build or locate the pinned binaries |
| ``bench`` | ``python -m benchmarks`` | the benchmarks |

The shared flags mean the same everywhere: ``--stack`` (default ``dev``; stacks/Pulumi.<stack>.yaml), ``--output``
(``table`` default; ``json`` where the tool has a JSON form: ``status``, ``verify``, ``report``; ``csv`` and ``html``
for ``report``; refused elsewhere with exit 2),
``--verbose`` (Python tracebacks and the engine's full errors), ``--yes`` (no question before ``up``/``destroy``, as
``pulumi up --yes``). Every other flag goes to the tool unchanged (``kueue-cohorts up --help`` shows the tool's own).
Exit codes are the tools': 0 ok, 1 the command failed, 2 usage or configuration error; 141 when the reader of the
output went away (``kueue-cohorts preview | head``).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, TextIO

import benchmarks.__main__ as benchmarks_main
import cohorts.cli as cohorts_cli
import deploy.__main__ as deploy_main
import kueue_cohorts.newstack as newstack
import prsummary.__main__ as prsummary_main
import sandbox.cli as sandbox_cli
import toolchain.__main__ as toolchain_main
from kueue_cohorts import __version__, versions_line
from kueue_cohorts import validate as validation
from kueue_cohorts.pipes import run_main

ToolMain = Callable[[Optional[list[str]]], int]


@dataclass(frozen=True)
class Command:
    """One subcommand: ``tool`` is the tool's ``main(argv)``; ``head`` the words put before the forwarded flags
    (the tool's own subcommand); ``stack``/``verbose`` whether the tool takes that shared flag; ``output`` the
    ``--output`` forms it has besides table;
    ``confirm`` whether it asks before it runs (``up``, ``destroy``); ``summary`` one line for ``--help``."""

    tool: ToolMain
    head: tuple[str, ...]
    summary: str
    stack: bool = True
    verbose: bool = True
    output: tuple[str, ...] = ()
    confirm: bool = False


def _deploy(command: str, summary: str, confirm: bool = False) -> Command:
    return Command(deploy_main.main, (command,), summary, confirm=confirm)


COMMANDS: dict[str, Command] = {
    "up": _deploy("up", "show the plan, ask, then pulumi up the stack (--yes: no question)", confirm=True),
    "preview": _deploy("preview", "pulumi preview of the stack with the policy pack"),
    "destroy": _deploy("destroy", "ask, then delete every resource of the stack (--yes: no question)", confirm=True),
    "refresh": _deploy("refresh", "read the live objects into the stack's state"),
    "cancel": _deploy("cancel", "clear the lock of a run whose process is gone"),
    "render": _deploy("render", "write the stack's objects as YAML (--out DIR), no cluster"),
    "init": Command(newstack.main, (), "write a new stack file from a template (--from STACK), with its own salt",
                    verbose=False),
    "validate": Command(validation.main, (), "the settings check of the stack file (every problem at once)",
                        verbose=False),
    "status": Command(cohorts_cli.main, ("status",), "the stack's cohorts on its live cluster", verbose=False,
                      output=("json",)),
    "verify": Command(cohorts_cli.main, ("verify",), "check the live cluster and its promises; exit 1 on findings",
                      verbose=False, output=("json",)),
    "report": Command(cohorts_cli.main, ("report",), "GPU-hours owned, used, borrowed, lent; preemptions; waits "
                      "(Prometheus, --since 7d)", verbose=False, output=("json", "csv", "html")),
    "monitoring": Command(cohorts_cli.main, ("monitoring",), "write the stack's alerts and Grafana dashboard "
                          "(--out DIR)", verbose=False),
    "trace": Command(cohorts_cli.main, ("trace",), "a demand trace for the stack: synth (seeded) or record (live)",
                     verbose=False),
    "whatif": Command(cohorts_cli.main, ("whatif",), "replay a trace on the stack's quotas and the base ref's "
                      "(--trace FILE --base REF)", verbose=False, output=("json", "html")),
    "sandbox": Command(sandbox_cli.main, (), "the local control plane: up, down, status, logs", stack=False),
    "pr-summary": Command(prsummary_main.main, (), "the pull-request summary of one stack (--base REF)"),
    "toolchain": Command(toolchain_main.main, (), "build (ensure) or locate (path) the pinned binaries", stack=False,
                         verbose=False),
    "bench": Command(benchmarks_main.main, (), "run the benchmarks", stack=False, verbose=False),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kueue-cohorts", formatter_class=argparse.RawDescriptionHelpFormatter, add_help=False,
        description="Share one GPU cluster between inference and training with Kueue, as a Pulumi stack.",
        epilog="commands:\n" + "\n".join(f"  {name:<11} {cmd.summary}" for name, cmd in COMMANDS.items())
        + "\n\n`kueue-cohorts COMMAND --help` shows the command's own flags.")
    parser.add_argument("--version", action="version", version=f"kueue-cohorts {__version__} ({versions_line()})")
    parser.add_argument("-h", "--help", action="store_true", help="this help; after a command, the command's own")
    parser.add_argument("command", nargs="?", choices=COMMANDS, metavar="COMMAND")
    parser.add_argument("--stack", default="dev", help="stack name: stacks/Pulumi.<stack>.yaml (default dev)")
    parser.add_argument("--output", "-o", choices=("table", "json", "csv", "html"), default=None,
                        help="table (default); json, csv or html where the command has that form")
    parser.add_argument("--verbose", action="store_true", help="show Python tracebacks and the engine's full errors")
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask before up or destroy")
    return parser


def tool_argv(name: str, rest: Sequence[str], stack: str, output: Optional[str], verbose: bool) -> list[str]:
    """The argv that ``kueue-cohorts NAME`` hands its tool: the tool's own subcommand, the shared flags the tool
    takes, then ``rest`` (the flags the shared parser did not know) unchanged.

    Raises ValueError when ``--output json`` is asked of a command without a JSON form.
    """
    cmd = COMMANDS[name]
    if output not in (None, "table") and output not in cmd.output:
        raise ValueError(f"`{name}` has no {output} output; `--output {output}` works with: "
                         + ", ".join(n for n, c in COMMANDS.items() if output in c.output))
    # A tool with subcommands of its own (sandbox, toolchain, trace) takes them first, then its flags.
    argv = [*cmd.head]
    if rest and not rest[0].startswith("-") and name in ("sandbox", "toolchain", "trace"):
        argv.append(rest[0])
        rest = rest[1:]
    if cmd.stack:
        argv += ["--stack", stack]
    elif name == "sandbox" and argv[:1] == ["up"]:
        argv += ["--stack", stack]
    if cmd.output and output:
        argv += ["--output", output]
    if verbose and (cmd.verbose or name == "sandbox"):
        argv.append("--verbose")
    return argv + list(rest)


def confirm(question: str, stdin: TextIO, stderr: TextIO) -> bool:
    """Ask ``question`` on ``stderr`` and read the answer from ``stdin``: True for y/yes (any case).

    Returns False on anything else, end of input, or a non-interactive ``stdin`` (then it says to pass ``--yes``).
    """
    if not stdin.isatty():
        stderr.write(f"{question} needs an answer, and standard input is not a terminal: pass --yes\n")
        return False
    stderr.write(f"{question} [y/N] ")
    stderr.flush()
    answer = stdin.readline().strip().lower()
    return answer in ("y", "yes")


def main(argv: Optional[list[str]] = None, stdin: TextIO = sys.stdin, stderr: TextIO = sys.stderr) -> int:
    """Run ``kueue-cohorts`` on ``argv`` (default ``sys.argv[1:]``); return the exit code (see the module doc).

    ``up`` without ``--yes`` runs the tool's ``preview`` first and asks before the update (as ``pulumi up`` does);
    ``destroy`` asks. A refused or unanswered question exits 2 with nothing changed.
    """
    parser = _parser()
    args, rest = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help(sys.stdout if args.help else stderr)
        return 0 if args.help else 2
    if args.help:
        rest = [*rest, "--help"]
    cmd = COMMANDS[args.command]
    try:
        forwarded = tool_argv(args.command, rest, args.stack, args.output, args.verbose)
    except ValueError as err:
        stderr.write(f"kueue-cohorts: {err}\n")
        return 2
    if cmd.confirm and not args.yes and not any(flag in rest for flag in ("-h", "--help")):
        if args.command == "up":
            shown = cmd.tool([*tool_argv("preview", rest, args.stack, None, args.verbose)])
            if shown != 0:
                return shown
            question = f"Do you want to perform this update of stack {args.stack!r}?"
        else:
            question = f"Do you want to delete every resource of stack {args.stack!r}?"
        if not confirm(question, stdin, stderr):
            stderr.write("kueue-cohorts: nothing was changed\n")
            return 2
    return cmd.tool(forwarded)


def entry() -> int:
    """The console script (``[project.scripts]`` in pyproject.toml): ``main`` with a closed pipe ending quietly."""
    return run_main(main)


if __name__ == "__main__":
    sys.exit(entry())
