"""deploy/live_preflight.py ``names`` reads the identities a guardrail lets through from the lists the guardrail
writes (policy/rules/book/admission.py ``identities_named``), never from any other string literal: a user named "." was
found in every policy's messages, so the guardrails that did not yet name it were not updated first (CI, 2026-12-07)."""
from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.book.admission import (
    Identities,
    _requested_by,
    _stack_identity,
    cel_string,
    identities_named,
)

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(users=st.lists(TEXT, max_size=4), groups=st.lists(TEXT, max_size=4), other=TEXT)
@example(users=["a"], groups=[], other=".")
@example(users=['"]'], groups=["g, g in [\"x\"]"], other=" (requested by ")
def test_the_lists_the_guardrail_writes_are_read_back_and_nothing_else(users, groups, other):
    identities = Identities(users=tuple(users), groups=tuple(groups))
    expression = f"{_stack_identity(identities)} && object.metadata.name != {cel_string(other)}"
    message = f"{cel_string(other)} + {_requested_by()}"
    assert identities_named(expression) == (frozenset(users), frozenset(groups))
    assert identities_named(message) == (frozenset(), frozenset())
