"""Settings every test shares: hypothesis never fails a test on wall-clock time, and no run passes while a test was
skipped or an e2e test was collected but never run.

Hypothesis's default 200 ms deadline per example turns a loaded 2-core machine (CI next to other jobs) into random
failures; timing is never a test assertion here (hang guards are pytest timeouts), so the deadline is off for every
property test, and a property that is too slow shows as a slow test in `--durations`.

`make test` runs the suite on two pytest-xdist workers (`-n 2 --dist loadfile --no-loadscope-reorder`): each test
file runs whole on one worker, in collection order (the e2e files first, in their numbered order), so a file's module
fixtures are set up once and its tests run in order; each worker starts its own session sandbox for the e2e files it
takes. (`--dist loadgroup` with `xdist_group` marks grouped nothing: pytest-xdist 3.8 appends the group to
`item._nodeid`, which pytest 9.2 no longer reads, node ids being `item._id`; a file's tests were spread over both
workers and both sandboxes.)

No silent skip (`pytest_sessionfinish`, on the controller only, where pytest-xdist hands every worker's reports): a run
fails when any test or collected module was skipped, when a test failed as expected under an xfail that is not
`strict=True` with the exception it expects named (`raises=`, so an unrelated crash is not taken for the known
failure), and when e2e tests were
collected but fewer of them ran (a test whose `call` phase never came: a worker lost, a session fixture that killed
the rest). The e2e count is taken from the collection itself: the items of the run without pytest-xdist, the ids each
worker reports collecting (`pytest_xdist_node_collection_finished`) with it.
"""
from __future__ import annotations

from typing import Any

import pytest
from hypothesis import settings

settings.register_profile("kueue-cohorts", deadline=None)
settings.load_profile("kueue-cohorts")


E2E_PREFIX = "tests/e2e/"
"""How the node id of an e2e test starts (rootdir-relative, as pytest and pytest-xdist name it)."""

_COLLECTED = pytest.StashKey[set[str]]()
_RAN = pytest.StashKey[set[str]]()
_SKIPPED = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    """Start the run's record: node ids collected, node ids whose `call` phase ran, skips seen."""
    config.stash[_COLLECTED] = set()
    config.stash[_RAN] = set()
    config.stash[_SKIPPED] = []


def _is_worker(config: pytest.Config) -> bool:
    """True inside a pytest-xdist worker (the controller judges the whole run)."""
    return hasattr(config, "workerinput")


def lax_xfail(item: pytest.Item) -> str | None:
    """Why `item`'s expected failure would hide a failure, or None: an xfail mark must be `strict=True` (an
    unexpected pass fails), name the exception it expects (`raises=`) and run the test; an xfail without a mark
    (`pytest.xfail()` inside the test) is a skip by another name."""
    marks = list(item.iter_markers("xfail"))
    if not marks:
        return "pytest.xfail() called in the test: a skip by another name"
    for mark in marks:
        if mark.kwargs.get("strict") is not True:
            return "an xfail mark without strict=True lets an unexpected pass go by"
        if mark.kwargs.get("raises") is None:
            return "an xfail mark without raises= takes any error for the known failure"
        if mark.kwargs.get("run", True) is not True:
            return "an xfail mark with run=False never runs the test"
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Record the collected node ids (without pytest-xdist; a worker's reach the controller through
    `pytest_xdist_node_collection_finished`)."""
    if not _is_worker(session.config):
        session.config.stash[_COLLECTED].update(item.nodeid for item in session.items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """An expected failure whose xfail is lax (`lax_xfail`) carries why in the report's user_properties, which
    pytest-xdist hands to the controller with the report."""
    report = yield
    if hasattr(report, "wasxfail") and (why := lax_xfail(item)) is not None:
        report.user_properties.append((LAX_XFAIL, why))
    return report


LAX_XFAIL = "kueue-cohorts-lax-xfail"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """pytest-xdist (controller): one worker's collection; every worker collects the same items."""
    node.config.stash[_COLLECTED].update(ids)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Every phase report (on the controller too, under pytest-xdist): remember which tests reached their `call`
    phase and which were skipped (an xfail is reported as skipped with `wasxfail` and is judged by its mark)."""
    config = _config_of(report)
    if config is None:
        return
    if report.when == "call":
        config.stash[_RAN].add(report.nodeid)
    lax = dict(report.user_properties).get(LAX_XFAIL)
    if lax is not None:
        config.stash[_SKIPPED].append(f"{report.nodeid}: {lax}")
    elif report.skipped and not hasattr(report, "wasxfail"):
        config.stash[_SKIPPED].append(f"{report.nodeid}: {_reason(report)}")


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A module skipped at collection (`pytest.skip(allow_module_level=True)`, `importorskip`) is a skip too."""
    config = _config_of(report)
    if config is not None and report.skipped:
        config.stash[_SKIPPED].append(f"{report.nodeid}: {_reason(report)}")


_CONFIG: list[pytest.Config] = []


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Keep the run's config for the report hooks (their reports carry none)."""
    _CONFIG[:] = [session.config]


def _config_of(_report: object) -> pytest.Config | None:
    return _CONFIG[0] if _CONFIG else None


def _reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def silent_gaps(collected: set[str], ran: set[str], skipped: list[str]) -> list[str]:
    """What makes a run that may look green incomplete: every skip, and the e2e tests collected that never reached
    their `call` phase (only when e2e tests were collected). Returns one line per finding, [] for a whole run."""
    problems = [f"skipped: {line}" for line in skipped]
    e2e = sorted(nodeid for nodeid in collected if nodeid.startswith(E2E_PREFIX))
    missing = [nodeid for nodeid in e2e if nodeid not in ran]
    if missing:
        problems.append(f"{len(e2e) - len(missing)} of {len(e2e)} e2e tests collected ran; not run: "
                        + ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""))
    return problems


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """On the controller: fail the run (exit status 1) on any skip and on e2e tests collected but not run, and say
    why at the end of the output. A run that already failed or was interrupted keeps its status."""
    config = session.config
    if _is_worker(config) or config.option.collectonly:
        return
    problems = silent_gaps(config.stash[_COLLECTED], config.stash[_RAN], config.stash[_SKIPPED])
    if not problems:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.section("no silent skip (tests/conftest.py)", red=True)
        for line in problems:
            reporter.line(line, red=True)
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
