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
    own exit status stands. Returns the wrapped printer. Raises what ``echo`` raises otherwise.
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

    return guarded
