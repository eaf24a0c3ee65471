"""`python -m kueue_cohorts.prsummary.baseline`: `pulumi up` of the BASE commit's program into a throwaway file backend.

Runs in its own process so that the base commit's `components` package (exported with `git archive`) is the one
imported, never the working tree's. The project directory holds Pulumi.yaml and the base stack file, already
made offline (prsummary.stackfile.offline: render mode, Kueue chart from its Go module), so neither a cluster nor
a registry is needed. Exit 0 on success, 1 with the engine's error lines on stderr otherwise.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from pulumi import automation as auto

from kueue_cohorts.deploy import engine


def build_base_state(project: Path, program: Path, stack: str, backend: str) -> None:
    """`pulumi up` of `program` (a base commit's __main__.py) for `stack` of the project copy `project`, into
    `backend` (a `file://` URL), without the policy pack. Raises auto.CommandError if the engine fails,
    toolchain.ToolchainError if the CLI is not built."""
    st = engine.open_stack(stack, work_dir=project, program=program, backend=backend)
    kwargs = engine.run_kwargs(st, policy=False, color="never")
    st.up(**kwargs)


_ERROR_LINE = re.compile(r"^\s*(error: |[A-Za-z_.]*(Error|Exception): )")


def essence(output: str, limit: int = 3) -> str:
    """The lines of an engine run's output that say what failed: `error: ...` lines and exception lines
    (`FileNotFoundError: ...`), at most `limit`, deduplicated; else the last `limit` non-empty lines."""
    found: list[str] = []
    for line in output.splitlines():
        if _ERROR_LINE.match(line) and line.strip() not in found:
            found.append(line.strip())
    if not found:
        found = [line.strip() for line in output.splitlines() if line.strip()][-limit:]
    return "\n".join(found[:limit])


def main(argv: list[str] | None = None) -> int:
    """Parse `--project --program --stack --backend`, build the base state; return the exit code."""
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m kueue_cohorts.prsummary.baseline",
                                     description=__doc__)
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--program", type=Path, required=True)
    parser.add_argument("--stack", required=True)
    parser.add_argument("--backend", required=True)
    args = parser.parse_args(argv)
    try:
        build_base_state(args.project, args.program, args.stack, args.backend)
    except auto.CommandError as exc:
        print(essence(str(exc)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
