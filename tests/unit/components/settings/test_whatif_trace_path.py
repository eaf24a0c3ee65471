"""`whatif.trace` stays inside the repository (issue 38, class 7): a path that could leave the project root however
it is joined to it is refused at its key, with the fix; the settings-level half (the reader, whatif/trace.py, opens
it below the root)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import validate
from tests.helpers import stack_raw

KEY = "kueue-cohorts:whatif.trace"
FIX = "write it relative to the project root, e.g. traces/staging.jsonl"


def _problems(trace: str) -> list[tuple[str, object, str]]:
    raw = {**stack_raw("staging"), "whatif": {"trace": trace}}
    return [(p.key, p.value, p.fix) for p in validate(raw).problems]


@pytest.mark.parametrize("trace", ["../secrets.jsonl", "traces/../../x.jsonl", "~/t.jsonl", "traces//t.jsonl",
                                   "./t.jsonl", "traces\\..\\x.jsonl", "traces/\x00.jsonl"])
def test_a_trace_that_could_leave_the_repository_is_refused_at_its_key(trace):
    assert _problems(trace) == [(KEY, trace, FIX)]


def test_a_trace_inside_the_repository_is_accepted():
    assert _problems("traces/staging.jsonl") == []


@given(st.lists(st.sampled_from(["a", "b", "..", ".", "", "~", "c d"]), min_size=1, max_size=5))
def test_an_accepted_trace_never_leaves_the_root(parts):
    """Whatever the components: an accepted path, normalised, is below the root."""
    trace = "/".join(parts) + ".jsonl"
    if not _problems(trace):
        assert not trace.startswith("~")  # Path.expanduser() would take it to the home directory
        depth = 0
        for part in trace.split("/"):
            depth += -1 if part == ".." else (0 if part in ("", ".") else 1)
            assert depth >= 0
