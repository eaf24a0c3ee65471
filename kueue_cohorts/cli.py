"""``kueue-cohorts``: one command for every tool of the project, one parser.

    kueue-cohorts [--version] COMMAND [SUBCOMMAND] [FLAGS ...]

| command | runs | what it does |
|---|---|---|
| ``up`` | ``deploy.run`` | shows the plan (a preview, policy pack on), asks unless ``--yes``, then updates |
| ``preview`` | ``deploy.run`` | the plan, with the policy pack |
| ``destroy`` | ``deploy.run`` | asks, unless ``--yes``; then deletes every resource of the stack |
| ``refresh``, ``cancel``, ``render`` | ``deploy.run`` | state refresh, clear a dead run's lock, YAML out |
| ``init`` | ``kueue_cohorts.newstack`` | a new stack file from a template stack (``--from``), its own encryption salt |
| ``validate`` | ``kueue_cohorts.validate`` | the settings check of a stack file, no engine |
| ``status``, ``verify`` | ``cohorts.cli`` | the stack's cohorts on its live cluster |
| ``report``, ``monitoring`` | ``cohorts.cli`` | GPU-hours from Prometheus; the stack's alerts and dashboard |
| ``trace``, ``whatif`` | ``cohorts.cli`` | a demand trace (``synth``, ``record``); its replay on the quotas |
| ``sandbox`` | ``sandbox.cli`` | the local control plane: ``up``, ``down``, ``status``, ``logs`` |
| ``pr-summary`` | ``prsummary`` | the pull-request summary of one stack |
| ``toolchain`` | ``toolchain`` | build or locate the pinned binaries |
| ``bench`` | ``benchmarks`` | the benchmarks |

One parser (``parser()``): each command is a sub-parser that holds exactly its tool's flags, added by the tool's own
``add_arguments`` (the same function its ``python -m`` form uses), and every level is a
``kueue_cohorts.scaffold.Parser``: no prefix matching, so ``--out`` is never read as ``--output`` (issue 39), and
``kueue-cohorts COMMAND --help`` is the command's own usage (``usage: kueue-cohorts up ...``) with a few lines in a
user's words. The flags mean the same wherever a command has them: ``--stack`` (default ``dev``;
stacks/Pulumi.<stack>.yaml), ``--output`` (``table`` default; ``json`` for ``status``, ``verify``, ``report``;
``csv`` and ``html`` for ``report``), ``--verbose`` (Python tracebacks and the engine's full errors), ``--yes`` (no
question before ``up``/``destroy``, as ``pulumi up --yes``); a flag a command does not have is a usage error (exit 2).
Exit codes are the tools': 0 ok, 1 the command failed, 2 usage or configuration error; 141 when the reader of the
output went away (``kueue-cohorts preview | head``).
"""
from __future__ import annotations

import argparse
import functools
import sys
from dataclasses import dataclass
from typing import Callable, Optional, TextIO

import kueue_cohorts.benchmarks.cli as benchmarks_cli
import kueue_cohorts.cohorts.cli as cohorts_cli
import kueue_cohorts.deploy.cli as deploy_cli
import kueue_cohorts.newstack as newstack
import kueue_cohorts.prsummary.cli as prsummary_cli
import kueue_cohorts.sandbox.cli as sandbox_cli
import kueue_cohorts.toolchain.cli as toolchain_cli
from kueue_cohorts import __version__
from kueue_cohorts import validate as validation
from kueue_cohorts.scaffold import Parser, run_main
from kueue_cohorts.toolchain import versions

Run = Callable[[argparse.Namespace], int]

#: The pinned components ``--version`` names, in this order (toolchain/versions.toml ``[binaries.<entry>]``).
_SHOWN = ("kueue", "trainer", "jobset", "kubernetes", "pulumi", "pulumi-resource-kubernetes")


def versions_line() -> str:
    """One line naming the pinned versions this checkout builds and tests against, e.g. ``Kueue 0.19.2, ...``.

    Reads toolchain/versions.toml (the one versions file). Raises nothing a user can cause: a missing entry is
    left out.
    """
    entries = versions.load().entries
    labels = {"kueue": "Kueue", "trainer": "Trainer", "jobset": "JobSet", "kubernetes": "Kubernetes",
              "pulumi": "pulumi", "pulumi-resource-kubernetes": "pulumi-kubernetes"}
    return ", ".join(f"{labels[name]} {entries[name].version}" for name in _SHOWN if name in entries)


@dataclass(frozen=True)
class Command:
    """One subcommand of ``kueue-cohorts``: ``add_arguments(parser)`` puts the tool's own flags (and
    subcommands) on the subcommand's parser, ``run(args)`` runs the tool on the Namespace that parser gives and
    returns its exit code; ``summary`` is its line in ``kueue-cohorts --help``, ``description`` the first lines of
    ``kueue-cohorts COMMAND --help``; ``confirm``: it asks before it changes anything (``up``, ``destroy``), and takes
    ``--yes``."""

    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Run
    summary: str
    description: str
    confirm: bool = False


def _deploy(command: str, confirm: bool = False) -> Command:
    summary, description = deploy_cli.HELP[command]
    return Command(lambda parser: deploy_cli.add_arguments(parser, command), deploy_cli.run, summary, description,
                   confirm=confirm)


def _cohorts(command: str) -> Command:
    summary, description = cohorts_cli.HELP[command]
    return Command(lambda parser: cohorts_cli.add_arguments(parser, command), cohorts_cli.run, summary, description)


COMMANDS: dict[str, Command] = {
    "up": _deploy("up", confirm=True),
    "preview": _deploy("preview"),
    "destroy": _deploy("destroy", confirm=True),
    "refresh": _deploy("refresh"),
    "cancel": _deploy("cancel"),
    "render": _deploy("render"),
    "init": Command(newstack.add_arguments, newstack.run, "write a new stack file from a template (--from STACK), "
                    "with its own salt", newstack.DESCRIPTION),
    "validate": Command(validation.add_arguments, validation.run, "the settings check of the stack file (every "
                        "problem at once)", validation.DESCRIPTION),
    "status": _cohorts("status"),
    "verify": _cohorts("verify"),
    "report": _cohorts("report"),
    "monitoring": _cohorts("monitoring"),
    "trace": _cohorts("trace"),
    "whatif": _cohorts("whatif"),
    "sandbox": Command(sandbox_cli.add_arguments, functools.partial(sandbox_cli.run,
                                                                    cohorts_view=cohorts_cli.cohorts_section),
                       "the local control plane: up, down, status, logs",
                       sandbox_cli.DESCRIPTION),
    "pr-summary": Command(prsummary_cli.add_arguments, prsummary_cli.run, "the pull-request summary of one stack "
                          "(--base REF)", "The markdown summary a pull request gets for one stack: the quota "
                          "tables, the what-if and the preview against the base ref (--out FILE: written there)."),
    "toolchain": Command(toolchain_cli.add_arguments, toolchain_cli.run, "build (ensure) or locate (path) the "
                         "pinned binaries", "Build the pinned binaries that are missing from the cache (ensure), or "
                         "print where one is (path)."),
    "bench": Command(benchmarks_cli.add_arguments, benchmarks_cli.run, "run the benchmarks",
                     "Run every benchmark (or --only NAME ...), one after the other; --write rewrites "
                     "kueue_cohorts/benchmarks/results/*.json."),
}


def parser() -> argparse.ArgumentParser:
    """The whole command line of ``kueue-cohorts``: one ``kueue_cohorts.scaffold.Parser`` (no abbreviations) with
    one sub-parser per command, each holding exactly the flags of its tool (``Command.add_arguments``) and
    ``--yes`` where the command asks. Everything after the command name is its sub-parser's: nothing is read by a
    shared parser first."""
    top = Parser(
        prog="kueue-cohorts", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Share one GPU cluster between inference and training with Kueue, as a Pulumi stack.",
        epilog="`kueue-cohorts COMMAND --help` shows the command's own flags.")
    top.add_argument("--version", action="version", version=f"kueue-cohorts {__version__} ({versions_line()})")
    sub = top.add_subparsers(dest="kueue_cohorts_command", metavar="COMMAND", title="commands")
    for name, cmd in COMMANDS.items():
        child = sub.add_parser(name, help=cmd.summary, description=cmd.description)
        cmd.add_arguments(child)
        if cmd.confirm:
            child.add_argument("--yes", "-y", action="store_true", help="do not ask before changing anything")
    return top


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
    ``destroy`` asks. A refused or unanswered question exits 2 with nothing changed. A bad command line exits 2
    with the usage of the command it names (argparse's SystemExit).
    """
    top = parser()
    args = top.parse_args(argv)
    if args.kueue_cohorts_command is None:
        top.print_help(stderr)
        return 2
    cmd = COMMANDS[args.kueue_cohorts_command]
    if cmd.confirm and not args.yes:
        if args.kueue_cohorts_command == "up":
            shown = cmd.run(argparse.Namespace(**{**vars(args), "command": "preview"}))
            if shown != 0:
                return shown
            question = f"Do you want to perform this update of stack {args.stack!r}?"
        else:
            question = f"Do you want to delete every resource of stack {args.stack!r}?"
        if not confirm(question, stdin, stderr):
            stderr.write("kueue-cohorts: nothing was changed\n")
            return 2
    return cmd.run(args)


def entry() -> int:
    """The console script (``[project.scripts]`` in pyproject.toml): ``main`` with a closed pipe ending quietly."""
    return run_main(main)


if __name__ == "__main__":
    sys.exit(entry())
