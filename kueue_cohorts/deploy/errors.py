"""Errors first: pull the engine's and the cluster's own error lines out of a failed run's output.

The engine's output of a failed run can be long (a resource table, then ``Diagnostics:`` with one block per
resource, Python tracebacks of the program, gRPC errors when the program's resource monitor shut down). The lines
that say what went wrong are the diagnostics' ``error:`` lines and the indented lines that continue them (the
provider's or the program's multi-line message). This module keeps those, drops Python tracebacks (shown only with
``--verbose``), the SDK's wrapper phrases and the engine's generic trailers, and keeps the order and the first
occurrence of each line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: Lines the engine adds to every failure, after the real cause: they say nothing about it.
GENERIC = re.compile(r"^error: (update|preview|refresh|destroy) failed$|^error: an unhandled error occurred: program "
                     r"failed:?$|^error: failed to run (preview|update)|^error: one or more (policy|resource)|"
                     r"^error: .*\bcontext canceled$")
#: Phrases the Python SDK puts before the program's own message (pulumi/automation/_server.py, runtime).
WRAPPERS = re.compile(r"^(an unhandled error occurred: |python inline source runtime error: |Program failed with an "
                      r"unhandled exception:\s*)+")
TRACEBACK = re.compile(r"^\s*Traceback \(most recent call last\):\s*$")
CHAINED = re.compile(r"^\s*(During handling of the above exception|The above exception was the direct cause)")
GRPC_NOISE = re.compile(r"grpc\._channel|_InactiveRpcError|_MultiThreadedRendezvous|StatusCode\.|debug_error_string|"
                        r"resource monitor shut down|Exception ignored in|^\s*(status|details) = \"|"
                        r"^\s*<_InactiveRpcError")
ERROR_LINE = re.compile(r"^\s*error:\s*", re.IGNORECASE)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


class TracebackFilter:
    """A line filter that leaves out Python tracebacks and gRPC plumbing, line by line (for streamed output).

    ``keep(line)`` is False for ``Traceback (most recent call last):`` and every line indented deeper than it (the
    frames and their source lines), for the chaining lines between tracebacks, and for gRPC lines of a shut-down
    resource monitor. The exception line that ends a traceback (``module.Error: message``, at the traceback's own
    indentation) is kept: it is the error.
    """

    def __init__(self) -> None:
        self.indent: int | None = None  # the indentation of the traceback in progress, None outside one

    def keep(self, line: str) -> bool:
        """Return True if ``line`` is to be shown."""
        if TRACEBACK.match(line):
            self.indent = _indent(line)
            return False
        if self.indent is not None:
            if not line.strip() or _indent(line) > self.indent or CHAINED.match(line):
                return False
            self.indent = None
        return not GRPC_NOISE.search(line)


def without_tracebacks(lines: Iterable[str]) -> list[str]:
    """Return ``lines`` without Python tracebacks and gRPC plumbing (see TracebackFilter)."""
    keep = TracebackFilter().keep
    return [line for line in lines if keep(line)]


def error_lines(output: Iterable[str], limit: int = 20) -> list[str]:
    """Return the error lines of a failed run's ``output`` (stdout and stderr lines, in order), first first.

    Kept: every ``error:`` line that is not one of the engine's generic trailers (GENERIC), without the SDK's
    wrapper phrases (WRAPPERS), each followed by the lines that continue it (indented deeper), tracebacks and gRPC
    plumbing removed; duplicates dropped; at most ``limit`` lines. Empty if the output holds no such line.
    """
    lines = [line.rstrip() for line in without_tracebacks(output)]
    found: list[str] = []
    seen: set[str] = set()

    def add(text: str) -> None:
        if text and text not in seen:
            seen.add(text)
            found.append(text)

    for i, line in enumerate(lines):
        if not ERROR_LINE.match(line):
            continue
        text = "error: " + WRAPPERS.sub("", ERROR_LINE.sub("", line, count=1)).strip()
        if GENERIC.match(text) or text == "error: ":
            continue
        add(text)
        indent = _indent(line)
        for follow in lines[i + 1:]:
            if not follow.strip() or _indent(follow) <= indent or ERROR_LINE.match(follow):
                break
            add("  " + follow.strip())
        if len(found) >= limit:
            break
    return found[:limit]


PACK_FAILED = re.compile(r"policy pack .* failed to start")
#: What the policy analyzer plugin printed before it exited (the engine shows it as the Stack's diagnostic).
ANALYZER_SAYS = re.compile(r"^\s*(?:pulumi:pulumi:Stack\b.*?\s{2,})?(pulumi-analyzer-[\w-]+): (.+?)\s*$")


def pack_start_reasons(output: Iterable[str]) -> list[str]:
    """Return why the policy pack could not start, one line per distinct message of its analyzer plugin, when the
    engine's ``output`` says a pack ``failed to start``; empty otherwise. The engine's error line names only the
    plugin's exit status (``could not read plugin [...]: exit status 1``); the plugin's own reason (a missing
    virtualenv, a missing requirement) is among the Stack's diagnostics, shown before only with ``--verbose``."""
    lines = list(output)
    if not any(PACK_FAILED.search(line) for line in lines):
        return []
    found: list[str] = []
    for line in lines:
        match = ANALYZER_SAYS.match(line)
        if match and f"{match.group(1)}: {match.group(2)}" not in found:
            found.append(f"{match.group(1)}: {match.group(2)}")
    return found


def command_output(exc: BaseException) -> list[str]:
    """The output lines of an Automation API CommandError (its text is ``code: N``, ``stdout: ...``, ``stderr:
    ...``): the ``code:`` line dropped and the ``stdout: `` / ``stderr: `` prefixes taken off the first lines."""
    lines = []
    for line in str(exc).splitlines():
        stripped = line.strip()
        if re.match(r"^code: -?\d+$", stripped):
            continue
        lines.append(re.sub(r"^\s*(stdout|stderr): ", "", line))
    return lines
