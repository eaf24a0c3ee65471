"""tests/conftest.py fails a run that skipped a test, ran fewer e2e tests than it collected, or took a failure for a
lax xfail: checked on a scratch project that uses the same conftest, without and with pytest-xdist's two workers (as
`make test` runs), through pytest itself (pytester, in a subprocess)."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = (Path(__file__).parents[1] / "conftest.py").read_text()

PASSING = "def test_one():\n    assert 1 + 1 == 2\n"
SWALLOW_ONE_E2E = '''
def pytest_runtest_protocol(item, nextitem):
    """A plugin that drops one e2e test without a report: the run would look green."""
    return True if item.name == "test_dropped" else None
'''


def _project(pytester: pytest.Pytester, files: dict[str, str], plugin: str = "") -> None:
    pytester.makeini("[pytest]\naddopts = -p no:randomly -p no:cacheprovider\nmarkers =\n    integration: a real CLI\n")
    (pytester.path / "tests" / "e2e").mkdir(parents=True)
    (pytester.path / "tests" / "conftest.py").write_text(CONFTEST + plugin)
    for name, text in files.items():
        (pytester.path / name).write_text(text)


SKIPS = {
    "skip_call": "import pytest\n\ndef test_skipped():\n    pytest.skip('no binaries')\n",
    "skip_mark": "import pytest\n\n@pytest.mark.skip(reason='later')\ndef test_skipped():\n    pass\n",
    "skipif": "import pytest\n\n@pytest.mark.skipif(True, reason='never here')\ndef test_skipped():\n    pass\n",
    "module_skip": "import pytest\npytest.skip('whole module', allow_module_level=True)\n\ndef test_skipped():\n"
                   "    pass\n",
    "importorskip": "import pytest\npytest.importorskip('no_such_module_anywhere')\n",
    "xfail_call": "import pytest\n\ndef test_skipped():\n    pytest.xfail('not today')\n",
    "lax_xfail": "import pytest\n\n@pytest.mark.xfail(reason='lax')\ndef test_skipped():\n    assert False\n",
    "xfail_without_raises": "import pytest\n\n@pytest.mark.xfail(strict=True, reason='no raises')\n"
                            "def test_skipped():\n    assert False\n",
}
"""Every way a test can be left out or excused, one file each."""

WORKERS = pytest.mark.parametrize("workers", [[], ["-p", "xdist", "-n", "2"]], ids=["one-process", "two-workers"])


@WORKERS
def test_a_run_with_a_skip_fails_and_names_each(pytester, workers):
    _project(pytester, {"tests/test_a.py": PASSING, **{f"tests/test_{k}.py": text for k, text in SKIPS.items()}})
    result = pytester.runpytest_subprocess("tests", *workers)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    named = [line for line in result.stdout.lines if line.startswith("skipped: tests/test_")]
    assert sorted({line.split("tests/test_", 1)[1].split(".py", 1)[0] for line in named}) == sorted(SKIPS)
    result.stdout.fnmatch_lines(["*no silent skip*"])


@WORKERS
def test_a_whole_run_and_a_strict_xfail_that_names_its_exception_pass(pytester, workers):
    strict = ("import pytest\n\n@pytest.mark.xfail(strict=True, raises=AssertionError, reason='upstream bug')\n"
              "def test_known():\n    assert False\n")
    _project(pytester, {"tests/test_a.py": PASSING, "tests/e2e/test_e.py": PASSING, "tests/test_x.py": strict})
    result = pytester.runpytest_subprocess("tests", *workers)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert "no silent skip" not in result.stdout.str()
    result.assert_outcomes(passed=2, xfailed=1)


@WORKERS
def test_e2e_tests_collected_but_not_run_fail_the_run(pytester, workers):
    e2e = PASSING + "\n\ndef test_dropped():\n    assert True\n"
    _project(pytester, {"tests/test_a.py": PASSING, "tests/e2e/test_e.py": e2e}, SWALLOW_ONE_E2E)
    result = pytester.runpytest_subprocess("tests", *workers)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(["*1 of 2 e2e tests collected ran; not run: tests/e2e/test_e.py::test_dropped*"])


@WORKERS
@pytest.mark.parametrize("deselect", [["-k", "not dropped"], ["-m", "not integration"]], ids=["-k", "-m"])
def test_deselected_e2e_tests_are_not_counted_as_collected(pytester, workers, deselect):
    """`-k` / `-m` (`make test-unit`: `-m "not integration"`) leave e2e tests out of the collection: not run is then
    not missing, in one process and on pytest-xdist's controller (whose workers report what they kept)."""
    e2e = PASSING + "\n\nimport pytest\n\n@pytest.mark.integration\ndef test_dropped():\n    assert True\n"
    _project(pytester, {"tests/test_a.py": PASSING, "tests/e2e/test_e.py": e2e}, SWALLOW_ONE_E2E)
    result = pytester.runpytest_subprocess("tests", *deselect, *workers)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert "no silent skip" not in result.stdout.str()
    assert result.parseoutcomes()["passed"] == 2  # pytest-xdist's controller does not print the deselected count
    result.stdout.fnmatch_lines(["*2 workers [[]2 items[]]*"] if workers else ["*1 deselected*"])
