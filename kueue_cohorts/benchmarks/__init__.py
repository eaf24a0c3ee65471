"""Benchmarks of kueue-cohorts: each module measures one thing side by side with what a user would use instead and
prints the figures. ``python -m kueue_cohorts.benchmarks`` (``make bench``) runs them all.

Shared convention (used by every benchmark): a run prints only; the recorded figures in
``benchmarks/results/<name>.json`` are rewritten only when ``--write`` is given, so a quick or partial run on a busy
machine never replaces the committed figures by accident.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def summary(doc: str | None) -> str:
    """Return the first paragraph of a benchmark module's docstring ``doc`` as one line, for its ``--help``
    description (its first line alone may stop mid-sentence); "" for None."""
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def add_write_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--write`` (store_true) to a benchmark's argument parser."""
    parser.add_argument("--write", action="store_true",
                        help="rewrite benchmarks/results/<name>.json with this run's figures (default: print only)")


def json_object(answer: object) -> dict[str, Any]:
    """Return ``answer`` (what the kubernetes client's CustomObjectsApi returns, typed ``object``: the decoded JSON
    object) as the dict it is. Raises TypeError when it is not a JSON object."""
    if not isinstance(answer, dict):
        raise TypeError(f"expected a JSON object from the API, got {type(answer).__name__}")
    return answer


def load_average() -> list[float]:
    """Return the machine's load averages over 1, 5 and 15 minutes (``os.getloadavg()``), rounded to 0.01."""
    return [round(x, 2) for x in os.getloadavg()]


def utc_now() -> str:
    """Return the current UTC time as ``YYYY-MM-DDTHH:MM:SSZ`` (the ``measured_at`` of every results file)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def save(name: str, document: dict[str, Any], write: bool) -> Path | None:
    """Write ``document`` as indented JSON to ``benchmarks/results/<name>.json`` if ``write``; return the path
    written, or None (and say so on stdout) when ``write`` is false."""
    path = RESULTS_DIR / f"{name}.json"
    if not write:
        print(f"{path.relative_to(RESULTS_DIR.parent.parent)} not rewritten (pass --write to record this run)")
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {path.relative_to(RESULTS_DIR.parent.parent)}")
    return path
