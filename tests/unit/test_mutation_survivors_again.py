"""`--survivors-again` with tests added to a target (issue 42, rules-placement): the scratch copy's mutmut
configuration follows the target's current test list, and says when it changed (mutmut then forgets every verdict,
so the benchmark runs every mutant again rather than leaving the killed ones "not checked")."""
from __future__ import annotations

import tomllib

from kueue_cohorts.benchmarks import mutation


def test_the_scratch_configuration_follows_the_target_s_test_list_and_says_when_it_changed(tmp_path, monkeypatch):
    monkeypatch.setattr(mutation, "SCRATCH", tmp_path)
    before = mutation.Target("probe", ("kueue_cohorts/trainer/checkpoints.py",), ("tests/trainer/test_checkpoints.py",))
    work = mutation.prepare(before)

    def selected() -> list[str]:
        config = tomllib.loads((work / "pyproject.toml").read_text())["tool"]["mutmut"]
        return list(config["pytest_add_cli_args_test_selection"])

    assert selected() == ["tests/trainer/test_checkpoints.py"]
    assert mutation._configure(before, work) is False  # the same list: the file is left as it was
    after = mutation.Target("probe", before.mutate, (*before.tests, "tests/trainer/test_checkpoint_branches.py"))
    assert mutation._configure(after, work) is True
    assert selected() == ["tests/trainer/test_checkpoints.py", "tests/trainer/test_checkpoint_branches.py"]
    assert mutation._configure(after, work) is False
