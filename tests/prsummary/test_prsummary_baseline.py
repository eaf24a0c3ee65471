"""What the summary quotes from a failed engine run."""
from __future__ import annotations

from kueue_cohorts.prsummary.baseline import essence


def test_error_and_exception_lines_are_kept():
    out = ("Updating (staging):\n  + pulumi:pulumi:Stack\n    error: kubernetes:helm.sh/v4:Chart 'k' has a problem\n"
           "    Traceback (most recent call last):\n    FileNotFoundError: trainer is missing\n"
           "    error: kubernetes:helm.sh/v4:Chart 'k' has a problem\nDuration: 3s\n")
    assert essence(out) == ("error: kubernetes:helm.sh/v4:Chart 'k' has a problem\n"
                            "FileNotFoundError: trainer is missing")


def test_without_error_lines_the_tail_is_kept():
    assert essence("a\n\nb\nc\nd\n", limit=2) == "c\nd"
