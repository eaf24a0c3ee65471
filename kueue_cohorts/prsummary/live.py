"""`python -m kueue_cohorts.prsummary.live --stack NAME --outcome OUTCOME --text FILE --out FILE`: the comment of the
live preview
(.github/workflows/live-preview.yml), from the text `python -m kueue_cohorts.deploy preview --pull-request` printed.

The text holds values of the pull request (names, keys, messages that quote them), so it goes into a code block no
line of it can close (components.settings.quoting.markdown_fence); at most the last MAX_BYTES bytes of it are kept
(a GitHub comment holds 65,536 characters), decoded as UTF-8 with a replacement character where the cut or the text
breaks a character. Exit codes: 0 written; 2 bad arguments.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

from kueue_cohorts.components.settings.quoting import markdown_fence
from kueue_cohorts.scaffold import Parser, run_main

MAX_BYTES = 60_000
"""The most of the preview's text the comment shows (its end: the engine's summary and errors come last)."""


def comment(stack: str, outcome: str, text: bytes) -> str:
    """The comment's markdown: the sticky comment's marker line, a heading with `stack` and `outcome` (each in a
    code span that cannot be closed early: only letters, digits, `-`, `_` and `.` are kept) and the last MAX_BYTES
    bytes of `text` in a code block."""
    shown = text[-MAX_BYTES:].decode("utf-8", errors="replace")
    safe_stack = "".join(c for c in stack if c.isalnum() or c in "-_.")
    safe_outcome = "".join(c for c in outcome if c.isalnum() or c in "-_.")
    return (f"<!-- kueue-cohorts live preview: {safe_stack} -->\n### Live preview of `{safe_stack}` ({safe_outcome})"
            f"\n\n{markdown_fence(shown)}")


def main(argv: Optional[list[str]] = None) -> int:
    """Write the comment (see the module doc); return the exit code."""
    parser = Parser(prog="python -m kueue_cohorts.prsummary.live", description=__doc__)
    parser.add_argument("--stack", required=True)
    parser.add_argument("--outcome", required=True, help="the preview step's outcome (success, failure, ...)")
    parser.add_argument("--text", type=Path, required=True, help="the preview's output (missing: empty)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        text = args.text.read_bytes()
    except OSError:
        text = b""
    args.out.write_text(comment(args.stack, args.outcome, text))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
