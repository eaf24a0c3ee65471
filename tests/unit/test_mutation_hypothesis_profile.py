"""The mutation benchmark's pytest plugin (issue 42, rules-placement: two `_flavor_quotas` survivors of a batch were
killed when mutmut ran them alone): every mutant's property tests run the same examples, whatever the hypothesis
random generator of the process mutmut forks them from has drawn before, so a mutant's verdict is the same in a batch
and alone."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from kueue_cohorts.benchmarks import mutation


@pytest.fixture
def mutant_profile():
    """The plugin's profile loaded as in a mutant's run (its collect hook), the suite's profile back afterwards."""
    before = hypothesis_settings()
    mutation.pytest_collect_file(Path("tests/test_x.py"), None)
    yield hypothesis_settings()
    hypothesis_settings.register_profile("restored", before)
    hypothesis_settings.load_profile("restored")


def drawn() -> list[int]:
    """The examples a fresh property test draws under the current profile."""
    seen: list[int] = []

    @given(st.integers(0, 10 ** 9))
    def probe(value: int) -> None:
        seen.append(value)

    probe()
    return seen


def test_a_mutant_s_run_neither_shrinks_nor_replays_nor_draws_a_seed_of_its_process(mutant_profile):
    assert Phase.shrink not in mutant_profile.phases
    assert mutant_profile.database is None
    assert mutant_profile.derandomize is True


def test_the_same_test_draws_the_same_examples_after_other_property_tests_ran(mutant_profile):
    """A batch's mutants and a mutant alone differ in what ran before them in the process mutmut forks: the examples
    of a property test do not depend on it."""
    first = drawn()
    drawn()  # another test's draws in between, as the clean run of a batch makes
    assert drawn() == first
