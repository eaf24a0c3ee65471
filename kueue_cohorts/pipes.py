"""A closed pipe ends a command quietly, as `cat`, `kubectl` and `pulumi` do (`kueue-cohorts preview | head`).

Stdlib only and imports nothing of ours, so every entry point (``python -m deploy``, ``sandbox``, ``cohorts``, ...)
and the one ``kueue-cohorts`` command can use it without an import cycle.
"""
from __future__ import annotations

import os
import sys
from typing import Callable

#: The exit status of a command whose reader went away: 128 + SIGPIPE (13), what a shell reports for `yes | head`.
EXIT_CLOSED_PIPE = 141


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
