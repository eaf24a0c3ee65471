"""benchmarks.engine records the engine passes `deploy up` chose and its dry run's seconds (issue 40 item 7), read
from the very lines deploy prints (deploy/passes.py `Decision.lines`)."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.benchmarks.engine import passes_chosen
from kueue_cohorts.deploy import passes


@given(st.floats(min_value=0, max_value=999, allow_nan=False).map(lambda s: round(s, 1)), st.integers(1, 5000))
def test_the_pass_count_and_dry_run_seconds_are_read_from_deploys_own_line(seconds, count):
    one = passes.Decision(1, f"the program registers only the {count} resources of the assembler, which the "
                             f"settings check judged; the pack runs in the update (dry run {seconds:.1f} s)",
                          seconds=seconds)
    log = "deploy: backend file:///x\n" + "\n".join(f"deploy: {line}" for line in one.lines()) + "\nUpdating (b):\n"
    assert passes_chosen(log) == {"passes": 1, "dry_run_s": seconds}
    two = passes.Decision(2, f"the program registers 1 resource(s) the assembler did not build, which only the "
                             f"policy pack judges (its stack policies after the update created them): preview with "
                             f"the pack first (dry run {seconds:.1f} s)")
    assert passes_chosen("\n".join(f"deploy: {line}" for line in two.lines())) == {"passes": 2, "dry_run_s": seconds}


def test_no_dry_run_no_seconds_and_no_line_nothing():
    failed = passes.Decision(2, "the dry run of the program failed (RuntimeError: x), so the preview with the policy "
                                "pack comes first")
    assert passes_chosen(f"deploy: {failed.lines()[0]}\n") == {"passes": 2}
    assert passes_chosen("deploy: pulumi up --stack bench done in 3.0 s\n") == {}

