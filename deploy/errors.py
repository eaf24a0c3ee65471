"""Errors first: pull the engine's and the cluster's own error lines out of a failed run's output.

The engine's output of a failed run can be long (a resource table, then ``Diagnostics:`` with one block per
resource, Python tracebacks of the program, gRPC errors when the program's resource monitor shut down). The lines
that say what went wrong are the diagnostics' ``error:`` lines and the provider's messages next to them. This module
keeps those, drops Python tracebacks (shown only with ``--verbose``) and the engine's generic trailers, and keeps
the order and the first occurrence of each line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: Lines the engine adds to every failure, after the real cause: they say nothing about it.
GENERIC = (
    re.compile(r"^error: (update|preview|refresh|destroy) failed$"),
    re.compile(r"^error: an unhandled error occurred: program failed:?$"),
    re.compile(r"^error: preview failed$"),
    re.compile(r"^(Resources|Duration):"),
)
TRACEBACK_START = re.compile(r"^\s*(error: )?(Program failed with an unhandled exception:|Traceback \(most recent "
                             r"call last\):)")
#: A traceback frame or the source line under it (``  File "...", line N, in f`` / ``    code``).
FRAME = re.compile(r"^\s*(File \".*\", line \d+|\^+$|During handling of the above exception|The above exception)")
GRPC_NOISE = re.compile(r"grpc|_InactiveRpcError|StatusCode\.|debug_error_string|resource monitor shut down|"
                        r"Exception ignored in|^\s*(status|details) = ", re.IGNORECASE)
ERROR_LINE = re.compile(r"^\s*(error|Error):\s*\S")


class TracebackFilter:
    """A line filter that leaves out Python tracebacks and gRPC plumbing, line by line (for streamed output).

    ``keep(line)`` is False for ``Traceback (most recent call last):`` and the traceback's frames (indented
    ``File ...`` lines and the source lines under them) and for gRPC lines of a shut-down resource monitor; the
    exception line that ends a traceback is kept (it is the error).
    """

    def __init__(self) -> None:
        self.in_traceback = False

    def keep(self, line: str) -> bool:
        """Return True if ``line`` is to be shown."""
        if TRACEBACK_START.match(line):
            self.in_traceback = True
            return False
        if self.in_traceback:
            if FRAME.match(line) or (line.startswith(("    ", "\t")) and not ERROR_LINE.match(line)):
                return False
            self.in_traceback = False
        return not GRPC_NOISE.search(line)


def without_tracebacks(lines: Iterable[str]) -> list[str]:
    """Return ``lines`` without Python tracebacks and gRPC plumbing (see TracebackFilter)."""
    keep = TracebackFilter().keep
    return [line for line in lines if keep(line)]


def error_lines(output: Iterable[str], limit: int = 20) -> list[str]:
    """Return the error lines of a failed run's ``output`` (stdout and stderr lines, in order), first first.

    Kept: every ``error:`` line that is not one of the engine's generic trailers (GENERIC), with the indented
    lines that continue it (the provider's message often spans several), tracebacks and gRPC plumbing removed;
    duplicates dropped; at most ``limit`` lines. Empty if the output holds no such line.
    """
    lines = [line.rstrip() for line in without_tracebacks(output)]
    found: list[str] = []
    seen: set[str] = set()
    for i, line in enumerate(lines):
        if not ERROR_LINE.match(line):
            continue
        text = line.strip()
        if any(p.match(text) for p in GENERIC) or text in seen:
            continue
        seen.add(text)
        found.append(text)
        indent = len(line) - len(line.lstrip())
        for follow in lines[i + 1:]:
            if not follow.strip() or len(follow) - len(follow.lstrip()) <= indent or ERROR_LINE.match(follow):
                break
            if follow.strip() not in seen:
                seen.add(follow.strip())
                found.append("  " + follow.strip())
        if len(found) >= limit:
            break
    return found[:limit]
