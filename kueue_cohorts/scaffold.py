"""The floor under every tool: one parser shape, one way to fail, a closed pipe ending quietly.

Every command of the project (``kueue-cohorts COMMAND`` and each tool's ``python -m TOOL``) stands on this module:

- ``Parser``: argparse without prefix matching. argparse's default ``allow_abbrev=True`` reads any unique prefix of
  a long option as that option: with a shared ``--output`` beside a tool's ``--out``, ``kueue-cohorts render --out
  DIR`` became ``--output DIR`` ("invalid choice", issue 39). ``Parser`` turns it off (``allow_abbrev=False``,
  Python's argparse since 3.5), and its sub-parsers are ``SubParser`` (argparse's ``parser_class`` defaults to the
  parent's class), so every level of ``kueue-cohorts COMMAND [SUBCOMMAND] FLAGS`` is exact.
- ``Tool``: a tool's command line (``prog``, ``description``, ``add_arguments``, ``run``); ``Tool.main`` is what its
  ``python -m`` form runs, and the front door (``kueue_cohorts.cli``) calls the same ``add_arguments`` and ``run``.
- ``guard``: how a run fails. ``Failure`` (the tool's own message lines and exit code) and the tool's ``Known``
  errors print one message; anything else prints one line, its Python traceback only with ``--verbose``; Ctrl-C
  prints the tool's interrupted lines and exits 1. Exit codes: 0 ok, 1 the command failed, 2 usage or configuration.
- ``run_main`` and ``finish_quietly``: a closed stdout ends a command quietly with 141, as ``cat``, ``kubectl`` and
  ``pulumi`` do (``kueue-cohorts preview | head``).

Stdlib only and imports nothing of ours: it is the one module of ``kueue_cohorts`` the tools import (the layer
test holds it), so it sits below all of them without an import cycle.
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

#: The exit status of a command whose reader went away: 128 + SIGPIPE (13), what a shell reports for `yes | head`.
EXIT_CLOSED_PIPE = 141


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser(..., allow_abbrev=False)`` whose sub-parsers are ``SubParser``; takes and raises
    what ArgumentParser does (``parse_args`` exits 2 with a usage line on a bad command line)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def add_subparsers(self, **kwargs: Any) -> Any:
        """``ArgumentParser.add_subparsers`` with ``SubParser`` as the class of every sub-parser."""
        kwargs.setdefault("parser_class", SubParser)
        return super().add_subparsers(**kwargs)


class SubParser(Parser):
    """The parser of one subcommand: a word it does not know is its own usage error (``usage: kueue-cohorts up
    ...``, exit 2), not the top parser's (argparse hands a sub-parser's unknown words up to the top one, whose usage
    names no command)."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """Parse ``args`` as ``ArgumentParser.parse_known_args``; exit 2 with this parser's usage when a word is
        left over."""
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


@dataclass(frozen=True)
class Tool:
    """One tool's command line: ``add_arguments(parser)`` puts its flags (and subcommands) on a parser, ``run(args)``
    runs it on the Namespace that parser gives and returns the exit code; ``prog`` and ``description`` are its
    ``python -m`` usage. ``kueue-cohorts`` builds its sub-parsers from the same two functions."""

    prog: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    formatter_class: type[argparse.HelpFormatter] = argparse.HelpFormatter

    def parser(self) -> Parser:
        """The tool's whole parser (a ``Parser``, so no prefix matching)."""
        parser = Parser(prog=self.prog, description=self.description, formatter_class=self.formatter_class)
        self.add_arguments(parser)
        return parser

    def main(self, argv: list[str] | None = None) -> int:
        """Parse ``argv`` (default ``sys.argv[1:]``) and run the tool; return its exit code (argparse exits 2 itself
        on a bad command line)."""
        return self.run(self.parser().parse_args(argv))


def add_verbose(parser: argparse.ArgumentParser, help: str = "show Python tracebacks of unexpected failures") -> None:
    """Add ``--verbose`` (store_true) to ``parser``: the one flag ``guard`` reads to show a traceback."""
    parser.add_argument("--verbose", action="store_true", help=help)


class Failure(Exception):
    """A run that stops with its own message: ``lines`` go to stderr as they are, ``code`` is the exit code (1 the
    command failed, 2 usage or configuration)."""

    def __init__(self, code: int, *lines: str):
        super().__init__("\n".join(lines))
        self.code = code
        self.lines = lines


@dataclass(frozen=True)
class Known:
    """An error a tool expects: an exception of ``types`` prints ``<tool>: <message>`` (``message`` a
    ``str.format`` template over ``exc``, default the exception's text) and exits ``code``."""

    types: type[BaseException] | tuple[type[BaseException], ...]
    code: int
    message: str = "{exc}"


def guard(tool: str, body: Callable[[], int], *, verbose: bool = False, known: Sequence[Known] = (),
          what: str = "", interrupted: Callable[[], Sequence[str]] | None = None, err: TextIO | None = None) -> int:
    """Run ``body()`` and return its exit code; a failure prints one message on ``err`` (default stderr) instead of
    a traceback.

    ``Failure``: its lines, its code. An exception of a ``known`` entry: ``<tool>: <message>``, its code. Ctrl-C:
    ``interrupted()``'s lines (default ``<tool>: interrupted``), exit 1. Anything else: ``<tool>: <what> failed:
    <Type>: <first line>`` and exit 1, with the Python traceback before it only when ``verbose``. A closed stdout
    (BrokenPipeError) propagates: the entry point's ``run_main`` ends quietly. Raises only BrokenPipeError and what
    is not an Exception (SystemExit).
    """
    out = err if err is not None else sys.stderr
    try:
        return body()
    except BrokenPipeError:
        raise
    except Failure as failure:
        for line in failure.lines:
            print(line, file=out, flush=True)
        return failure.code
    except KeyboardInterrupt:
        for line in interrupted() if interrupted else [f"{tool}: interrupted"]:
            print(line, file=out, flush=True)
        return 1
    except Exception as exc:  # noqa: BLE001 - one message per failure, the traceback only with --verbose
        for entry in known:
            if isinstance(exc, entry.types):
                print(f"{tool}: {entry.message.format(exc=exc)}", file=out, flush=True)
                return entry.code
        if verbose:
            traceback.print_exc(file=out)
        first = (str(exc).strip().splitlines() or [""])[0]
        print(f"{tool}: {what + ' ' if what else ''}failed: {type(exc).__name__}: {first}"
              + ("" if verbose else " (--verbose shows the traceback)"), file=out, flush=True)
        return 1


def run_main(main: Callable[[], int]) -> int:
    """Call ``main()`` and return its exit status; a closed stdout (BrokenPipeError) ends it quietly.

    Follows the Python documentation's "Note on SIGPIPE" (library/signal.html): once the reader has gone, stdout is
    pointed at /dev/null so that the interpreter's final flush cannot raise again, and the status is 141. stdout is
    flushed here, also when ``main`` exits through SystemExit (argparse's ``--help`` and ``--version``), so a closed
    pipe is seen here and not at interpreter exit ("Exception ignored ... BrokenPipeError", status 120).
    Returns: ``main()``'s status, or 141 after a closed pipe. Raises: whatever ``main`` raises otherwise.
    """
    try:
        try:
            return main()
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_CLOSED_PIPE


def finish_quietly(echo: Callable[[str], None]) -> Callable[[str], None]:
    """Wrap ``echo`` (a printer of the engine's streamed lines) so that a closed stdout stops the printing, not the
    work: ``kueue-cohorts up | head`` must not leave an update half-applied because its reader went away.

    After the first BrokenPipeError, stdout is pointed at /dev/null and every later line is dropped; the command's
    own exit status stands. The printer runs on the Automation API's reader threads (pulumi.automation._cmd
    ``consumer``, pulumi 3.x): an exception there kills the thread that drains the engine's pipe (a traceback on
    stderr, and an engine that may block on a full pipe), so any other exception of ``echo`` (a stream closed or
    re-entered while Ctrl-C unwinds the main thread) also stops the printing and never propagates. Returns the
    wrapped printer; it never raises.
    """
    gone = False

    def guarded(line: str) -> None:
        nonlocal gone
        if gone:
            return
        try:
            echo(line)
        except BrokenPipeError:
            gone = True
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except Exception:  # noqa: BLE001 - the reader thread must go on draining the pipe (docstring)
            gone = True

    return guarded
