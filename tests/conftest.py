"""Settings every test shares: hypothesis never fails a test on wall-clock time.

Hypothesis's default 200 ms deadline per example turns a loaded 2-core machine (CI next to other jobs) into random
failures; timing is never a test assertion here (hang guards are pytest timeouts), so the deadline is off for every
property test, and a property that is too slow shows as a slow test in `--durations`.

`make test` runs the suite on two pytest-xdist workers (`-n 2 --dist loadgroup --no-loadscope-reorder`): every test
is put in an `xdist_group`, one per test file, and one for all of tests/e2e, so a file's module fixtures are set up once
and the e2e files run on one worker, in their numbered order, on the one session sandbox, while the other worker runs
the rest. The e2e files are collected first, so their worker starts with them.
"""
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("kueue-cohorts", deadline=None)
settings.load_profile("kueue-cohorts")


E2E = Path(__file__).parent / "e2e"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Group each test for pytest-xdist's loadgroup scheduling: `e2e` for tests/e2e, else its file."""
    for item in items:
        path = Path(item.fspath)
        item.add_marker(pytest.mark.xdist_group("e2e" if E2E in path.parents else str(path)))
