"""Mutation score of the modules the suite must pin down (issue 42): the rule book, the quantity grammars, the
settings checks and the trainer's checkpoint resolution, with mutmut (pinned in requirements-dev.txt).

For each target, in a scratch copy of the tracked files (``build/mutation/<target>``, so the work tree is never
mutated), mutmut 3 mutates the target's files one change at a time (a comparison flipped, a constant changed, a
call's argument dropped, ...) and runs the tests that reach the changed function; a mutant no test fails
*survives*. Printed per module: mutants, killed, survived (each named with its diff), the survivors judged
equivalent (``benchmarks/mutation_equivalent.json``: a change no input can tell apart, each with why) and the
score, killed / (mutants - equivalent). ``--write`` records ``benchmarks/results/mutation.json``. Mutation runs
belong here (``make bench``), never in ``make test``: the quantity target takes about a minute on two cores, the
whole rule book far longer.

``python -m kueue_cohorts.benchmarks.mutation [--only quantity checkpoints capacity] [--max-children 2]
[--survivors-again] [--collect] [--write]`` (``--survivors-again``: only the last run's survivors, against the
current tests; ``--collect``: record what a stopped run checked, its unchecked mutants counted apart)
"""
from __future__ import annotations

import ast
import fnmatch
import functools
import gc
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import Phase
from hypothesis import settings as hypothesis_settings

from kueue_cohorts import PROJECT_ROOT
from kueue_cohorts.benchmarks import add_write_flag, load_average, save, summary, utc_now
from kueue_cohorts.scaffold import Parser

ROOT = PROJECT_ROOT
SCRATCH = ROOT / "build" / "mutation"
EQUIVALENT = Path(__file__).resolve().parent / "mutation_equivalent.json"
"""The survivors judged equivalent: {"<module>": [{"change": [diff lines], "why": "..."}]}, matched by module and
the mutant's changed lines (stable across runs, unlike mutmut's mutant numbers)."""


@dataclass(frozen=True)
class Target:
    """One mutation run: `mutate` (repository-relative files mutmut changes) judged by `tests` (test files or
    directories, as pytest takes them).

    mutmut runs `tests` once with every function traced, and then runs for each mutant only the tests that reached
    its function. `max_stack_depth` (mutmut's own setting; -1 for no bound) narrows that: a test counts for a
    function only when fewer than that many frames of the mutated packages lie between the test and the call, so
    a test that reaches the function through the whole settings loader or the whole rule book does not judge it,
    and each mutant runs the tests written about its function and its near callers."""

    name: str
    mutate: tuple[str, ...]
    tests: tuple[str, ...]
    max_stack_depth: int = -1
    deselect: tuple[str, ...] = ()
    """Test ids left out of the traced run (and so of every mutant's run), each for the reason in `TARGETS`."""
    by_default: bool = True
    """False for the whole-module targets a run selects only with --only (each takes hours on two cores)."""
    functions: tuple[str, ...] = ()
    """When set, only the mutants of these functions (dotted module + name, ``components.checks.settings_rules.
    check_flavors``) are run and counted; the others of the files are neither run nor scored."""
    timeout_constant: float = 2.0
    """CPU seconds added to each mutant's limit, 3 x (its tests' traced seconds) + this (mutmut's
    `timeout_constant`). mutmut's traced seconds can be a fraction of what the same tests take in a mutant's run (the
    rules-runtime tests of `_check_reclaim`: 1.2 s traced, 5-8 CPU s run); a limit below that stops a mutant every
    test passes and counts it as killed ("timeout"), hiding a survivor."""

    def mutant_globs(self) -> list[str]:
        """mutmut's mutant-name patterns for `functions` (``<module>.x_<name>__mutmut_*``); [] means all."""
        return [f"{f.rpartition('.')[0]}.x_{f.rpartition('.')[2]}__mutmut_*" for f in self.functions]


REGISTRATION_ORDER = ("tests/unit/components/model/test_admission.py::"
                      "test_the_program_registers_the_guardrails_parented_and_before_the_cohorts")
"""Left out of the rule targets: it asserts the order in which the Pulumi mocks see resources registered, which
under mutmut's tracing (every call of the copied packages recorded) came out otherwise and failed the traced run;
it judges the program's registration, not the rules mutated there."""

MALFORMED_QUANTITIES = (
    "tests/policy/rules/test_cohort_nominal_within_capacity.py::"
    "test_malformed_nominal_quota_is_reported_by_the_capacity_policy",
    "tests/policy/rules/test_cohort_nominal_within_capacity.py::test_malformed_capacity_is_reported",
    "tests/policy/rules/test_inference_fits_nominal.py::test_malformed_request_is_reported_by_the_fit_policy")
"""Issue 13 item 11: a malformed quantity in a quota or request is reported by the stack policies, never raised; these
tests judge the quantity parser through those policies, beside the rest of each policy's tests."""

PULUMI_MOCKS_IN_A_FORK = tuple(f"tests/unit/components/model/test_training_runtime.py::{name}" for name in (
    "test_component_registers_configmap_and_runtime_as_parented_children",
    "test_train_job_refuses_a_local_queue_of_another_namespace"))
"""Left out of rules-runtime: they run the component under Pulumi mocks (`tests.helpers.run_with_mocks`), which pass
in the process mutmut traces but hang in every mutant's run, a fork of it (checked: the same test run again in a
forked child never returns); mutmut then stops the mutant at its limit and counts it "timeout", that is killed,
whatever the rule's own tests say. They judge the component's registration, not the rule."""

POLICIES_OF_THEIR_OWN = (
    "cluster_queue_covers_pod_resources", "cluster_queue_pinned_selector", "cluster_queue_role",
    "cluster_queue_selector_overlap", "inference_peak_fits_nominal", "inference_reclaim_unblocked",
    "inference_rollout_fits_nominal", "judgeable_patches", "kueue_api_version", "kueue_manager_config",
    "multikueue_workers_ready", "namespace_selector", "no_helm_release", "protected_namespaces",
    "single_layout_per_cohort", "training_priority_below_inference", "training_runtime_fits_queue",
    "trainjob_reserved_env", "workload_priority_class")
"""The policies of kueue_cohorts/policy/rules/ that no grouped target below mutates: each is its own target."""


def policy_target(policy: str) -> Target:
    """The target ``policy-<policy, dashed>`` for one module of kueue_cohorts/policy/rules/: ``<policy>.py`` mutated,
    judged by that policy's own test modules, ``tests/policy/rules/test_<policy>.py`` and its topic files
    ``test_<policy>_<topic>.py`` (the layout tests/policy/README.md describes). Raises ValueError when the policy
    has no test module."""
    return Target(f"policy-{policy.replace('_', '-')}", (f"kueue_cohorts/policy/rules/{policy}.py",),
                  _own_tests("tests/policy/rules", policy))


VOCABULARY_OF_ITS_OWN = ("durations", "kueue_counts", "node_pools", "patches", "paths", "plain", "resources", "roles",
                         "selectors", "signals")
"""The modules of kueue_cohorts/policy/rules/vocabulary/ with test modules of their own in tests/policy/vocabulary/
that no grouped target mutates (quantity, quota and placement are in the quantity, rules-inference and
rules-placement targets): each is its own target."""


def vocabulary_target(module: str) -> Target:
    """The target ``vocabulary-<module, dashed>``: ``vocabulary/<module>.py`` mutated, judged by its own test modules
    in tests/policy/vocabulary/ (``test_<module>.py``, ``test_<module>_<topic>.py``) and by the test modules of every
    policy that imports it (``_users``), but PODS_FIT_NODES' (its tests take minutes per mutant; the rules-placement
    target mutates its vocabulary with them). Raises ValueError when the module has no test module of its own."""
    tests = _own_tests("tests/policy/vocabulary", module) + tuple(
        test for policy in _users(module) if policy != "pods_fit_nodes"
        for test in _own_tests("tests/policy/rules", policy))
    return Target(f"vocabulary-{module.replace('_', '-')}", (f"kueue_cohorts/policy/rules/vocabulary/{module}.py",),
                  tests)


def _users(module: str) -> list[str]:
    """The policies of kueue_cohorts/policy/rules/ that import vocabulary ``module`` (relatively, as the pack stands
    alone: ``from .vocabulary.<module> import ...`` or ``from .vocabulary import <module>``), sorted."""
    def imports(node: ast.AST) -> bool:
        return isinstance(node, ast.ImportFrom) and node.level == 1 and (
            node.module == f"vocabulary.{module}" or (node.module == "vocabulary"
                                                      and any(a.name == module for a in node.names)))
    return sorted(p.stem for p in (ROOT / "kueue_cohorts" / "policy" / "rules").glob("*.py")
                  if any(imports(node) for node in ast.walk(ast.parse(p.read_text()))))


def _own_tests(folder: str, module: str) -> tuple[str, ...]:
    """The test modules of ``folder`` written about ``module``: ``test_<module>.py`` and ``test_<module>_<topic>.py``,
    repository-relative, sorted. Raises ValueError when there is none."""
    tests = tuple(sorted(str(p.relative_to(ROOT)) for p in (ROOT / folder).glob("test_*.py")
                         if p.stem == f"test_{module}" or p.stem.startswith(f"test_{module}_")))
    if not tests:
        raise ValueError(f"{module} has no {folder}/test_{module}.py")
    return tests


TARGETS = (
    Target("quantity", ("kueue_cohorts/components/settings/quantity.py", "kueue_cohorts/policy/rules/quantities.py",
                        "kueue_cohorts/policy/rules/vocabulary/quantity.py"),
           ("tests/unit/components/settings/test_quantity.py", "tests/policy/vocabulary/test_quantity_grammar.py",
            "tests/policy/vocabulary/test_quantity_exponents.py", "tests/policy/vocabulary/test_resources.py",
            "tests/policy/rules/test_quantities.py", *MALFORMED_QUANTITIES,
            "tests/unit/components/settings/test_stack_file_reader.py")),
    Target("checkpoints", ("kueue_cohorts/trainer/checkpoints.py",),
           ("tests/trainer/test_checkpoints.py", "tests/trainer/test_checkpoint_branches.py",
            "tests/trainer/test_run_dir_links.py")),
    Target("capacity", ("kueue_cohorts/policy/rules/cohort_nominal_within_capacity.py",),
           ("tests/policy/rules/test_cohort_nominal_within_capacity.py", "tests/policy/vocabulary/test_node_pools.py",
            "tests/policy/rules/test_single_layout_per_cohort.py",
            "tests/unit/components/settings/test_capacity_settings.py")),
    Target("rules-inference", ("kueue_cohorts/policy/rules/inference_reclaim_any.py",
                               "kueue_cohorts/policy/rules/inference_borrowing_limit_zero.py",
                               "kueue_cohorts/policy/rules/inference_fits_nominal.py",
                                   "kueue_cohorts/policy/rules/vocabulary/quota.py"),
           ("tests/policy/rules/test_inference_borrowing_limit_zero.py",
            "tests/policy/rules/test_inference_reclaim_any.py",
            "tests/policy/rules/test_namespace_selector.py", "tests/policy/rules/test_inference_fits_nominal.py",
            "tests/policy/rules/test_workload_priority_class.py",
            "tests/policy/rules/test_inference_rollout_fits_nominal.py",
            "tests/policy/rules/test_inference_peak_fits_nominal.py", "tests/policy/rules/test_cluster_queue_role.py",
            "tests/policy/rules/test_judgeable_patches.py", "tests/policy/rules/test_no_helm_release.py",
            "tests/policy/vocabulary/test_roles.py", "tests/policy/vocabulary/test_patches.py",
            "tests/policy/vocabulary/test_quota.py", "tests/policy/book/test_catalog.py",
            "tests/policy/book/test_declarations.py", *MALFORMED_QUANTITIES[:2],
            "tests/unit/components/model/test_admission.py", "tests/unit/components/model/test_planning_scale.py"),
           deselect=(REGISTRATION_ORDER,)),
    Target("rules-reclaim", ("kueue_cohorts/policy/rules/reclaim_within_budget.py",),
           ("tests/policy/rules/test_reclaim_within_budget.py", "tests/unit/components/model/test_admission.py"),
           deselect=(REGISTRATION_ORDER,)),
    Target("rules-placement", ("kueue_cohorts/policy/rules/pods_fit_nodes.py",
                               "kueue_cohorts/policy/rules/vocabulary/placement.py"),
           tuple(f"tests/policy/rules/test_pods_fit_nodes{topic}.py" for topic in (
               "", "_serving_pods", "_trainer_pods", "_reclaim", "_share_pods", "_trainjobs", "_skips", "_words",
               "_borrowers", "_borrower_queues")) + ("tests/policy/vocabulary/test_placement_search.py",)),
    Target("rules-runtime", ("kueue_cohorts/policy/rules/checkpoint_safe_runtime.py",),
           ("tests/policy/rules/test_checkpoint_safe_runtime.py",
            "tests/policy/rules/test_checkpoint_safe_runtime_mutants.py",
            "tests/policy/rules/test_checkpoint_safe_runtime_paths.py",
            "tests/policy/rules/test_training_runtime_fits_queue.py", "tests/policy/vocabulary/test_signals.py",
            "tests/unit/components/model/test_training_runtime.py"),
           deselect=PULUMI_MOCKS_IN_A_FORK, timeout_constant=20.0),
    Target("settings-checks", ("kueue_cohorts/components/checks/settings_rules.py",),
           tuple(f"tests/unit/components/settings/{name}.py" for name in (
               "test_bad_configs", "test_security_settings", "test_settings_checks_whole"))
           + ("tests/unit/components/checks/test_settings_rules_mutants.py",),
           deselect=("tests/unit/components/settings/test_bad_configs.py::"
                     "test_any_value_under_any_key_is_problems_never_an_exception",),
           functions=tuple(f"kueue_cohorts.components.checks.settings_rules.{name}" for name in (
               "check", "check_cluster_target", "check_node_capacity", "check_some_layout", "_preemption",
               "check_preemption", "_uncovered", "check_reclaim_budget_floor", "check_unique_names",
               "check_kueue_integrations", "check_training_runtime_home"))),
    Target("settings-checks-all", ("kueue_cohorts/components/checks/settings_rules.py",),
           ("tests/unit/components/settings", "tests/unit/components/checks"), by_default=False),
    Target("rule-book", ("kueue_cohorts/policy/rules/*.py",), ("tests/policy",
                                                               "tests/unit/components/model/test_admission.py",
                                                  "tests/unit/components/model/test_admission_rollout.py"),
           by_default=False),
    *(policy_target(policy) for policy in POLICIES_OF_THEIR_OWN),
    *(vocabulary_target(module) for module in VOCABULARY_OF_ITS_OWN),
    Target("book-admission", ("kueue_cohorts/policy/rules/book/admission.py",),
           tuple(f"tests/unit/components/model/test_admission{t}.py" for t in ("_cel", "_issue38", "_rollout", ""))
           + ("tests/policy/book/test_admission_identities.py",), deselect=(REGISTRATION_ORDER,)),
)
"""Every target, cheapest first, then the policies, the vocabulary modules and the CEL generator of their own. Each rule
target mutates one rule or group of rules and is judged by the tests written about them: the cross-judge parity test
(tests/policy/pack/test_rule_book_parity.py: every rule through the program's settings check and the pack's analyzer,
109 tests) and the settings layer's placement and reclaim tests (each one to five seconds through the settings
loader) reach every rule function and made a surviving mutant cost 20 s or more; they stay in the whole-module
targets. settings-checks runs the mutants of the named functions only, judged by the tests of bad configs and of the
checks themselves: every settings check runs on every config a test validates, so with the nine settings test files
each mutant ran about 250 tests (33 s traced) and the first 140 mutants took 6.5 minutes (all killed); the hypothesis
test feeding any value under any key (7 s) is left out. The rule book's and the settings checks' whole-module targets
(`by_default` False) run only with --only."""


def pytest_sessionstart(session: object) -> None:
    """pytest plugin hook (``-p benchmarks.mutation`` in every mutant's run): empty every ``functools.lru_cache``.
    mutmut forks each mutant's run from a process whose caches (the quantity parsers', the canonical printer's)
    hold what the unmutated code computed, which would hide the mutant."""
    clear_caches()


def pytest_collect_file(file_path: Path, parent: object) -> None:
    """pytest plugin hook (every mutant's run): before each test file is imported, and so before its ``@settings``
    take their defaults, the current hypothesis profile (the suite's, which tests/conftest.py loads) without the
    shrink phase and the example database, and derandomized. A mutant's run needs only the first failing example:
    shrinking it took most of a killed mutant's time in the placement target, and a database shared by mutants would
    replay one mutant's failures into another's run. Derandomized: mutmut forks every mutant's run from one process
    whose hypothesis random generator the clean run of the tests already drew from, so every mutant of a batch ran
    each property test with the same seed, and a mutant run alone (`mutmut run <name>`, another clean run before
    it) with another one; a property test that fails a mutant for some seeds only (rules-placement:
    `test_a_pod_too_wide_for_every_node_is_reported_when_some_flavor_may_take_it` let `_flavor_quotas` mutant 1
    pass for 2 seeds of 25) gave the batch and the lone run different verdicts. With a seed fixed per test (hypothesis
    `derandomize`), a verdict depends on the code and the tests only. Collects nothing (returns None)."""
    current = hypothesis_settings()
    if Phase.shrink in current.phases or current.database is not None or not current.derandomize:
        hypothesis_settings.register_profile("mutant", hypothesis_settings(
            current, phases=[p for p in current.phases if p is not Phase.shrink], database=None, derandomize=True))
        hypothesis_settings.load_profile("mutant")


def clear_caches() -> int:
    """Clear every live ``functools.lru_cache``; returns how many were cleared."""
    caches = [obj for obj in gc.get_objects() if isinstance(obj, functools._lru_cache_wrapper)]
    for cache in caches:
        cache.cache_clear()
    return len(caches)


def module_of(path: str) -> str:
    """The dotted module of a repository-relative .py file: ``trainer/checkpoints.py`` -> ``trainer.checkpoints``."""
    return path.removesuffix(".py").replace("/", ".")


def change_of(diff: str) -> list[str]:
    """The changed lines of a mutant's unified diff (``mutmut show``): each ``-``/``+`` line, stripped inside."""
    return [line[0] + " " + line[1:].strip() for line in diff.splitlines()
            if line[:1] in "-+" and not line.startswith(("---", "+++"))]


def load_equivalent(path: Path = EQUIVALENT) -> dict[str, list[dict[str, Any]]]:
    """The checked-in equivalent survivors, per module (see `EQUIVALENT`)."""
    document: dict[str, list[dict[str, Any]]] = json.loads(path.read_text())
    return document


def is_equivalent(module: str, change: list[str], equivalent: dict[str, list[dict[str, Any]]]) -> str | None:
    """Why the mutant `change` of `module` is equivalent, or None when it is not listed."""
    for entry in equivalent.get(module, []):
        if entry["change"] == change:
            return str(entry["why"])
    return None


def _mutmut_config(target: Target, files: list[str], top: list[str]) -> str:
    """mutmut's [tool.mutmut] table: the packages of `files` copied and mutated, every other top-level entry `top`
    copied beside them (the tests read stacks/, schema/, fixtures relative to the repository)."""
    packages = sorted({f.split("/", 1)[0] for f in files})
    return "\n".join([
        "", "[tool.mutmut]",
        f"source_paths = {json.dumps(packages)}",
        f"also_copy = {json.dumps(sorted(set(top) - set(packages)))}",
        f"only_mutate = {json.dumps(list(target.mutate))}",
        "pytest_add_cli_args_test_selection = "
        f"{json.dumps([*target.tests, *(a for t in target.deselect for a in ('--deselect', t))])}",
        f"max_stack_depth = {target.max_stack_depth}",
        # A mutant that loops is stopped after 6 x (its tests' traced seconds + 2) CPU seconds (mutmut's default,
        # 30 x (seconds + 1), let a looping mutant of a function 20 s of tests reach burn ten CPU minutes).
        "timeout_multiplier = 3.0", f"timeout_constant = {target.timeout_constant}",
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "kueue_cohorts.benchmarks.mutation", "-o", '
        '"addopts="]', ""])


def _configure(target: Target, work: Path) -> bool:
    """Write the scratch copy's pyproject.toml: the work tree's, with mutmut's configuration for `target` (its
    current test list) appended. Returns whether that changed the file (False: written as it was)."""
    files = sorted(str(p.relative_to(work)) for pattern in target.mutate for p in work.glob(pattern))
    top = [p.name for p in work.iterdir() if p.name not in ("mutants", ".git")]  # what `prepare` copied
    path = work / "pyproject.toml"
    text = (ROOT / "pyproject.toml").read_text() + _mutmut_config(target, files, top)
    if path.exists() and path.read_text() == text:
        return False
    path.write_text(text)
    return True


def prepare(target: Target) -> Path:
    """A fresh scratch copy of the work tree's files (tracked, and new ones git does not ignore) with mutmut's
    configuration for `target`, made a git repository of its own (nothing committed). Returns its directory."""
    work = SCRATCH / target.name
    shutil.rmtree(work, ignore_errors=True)
    tracked = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             check=True, capture_output=True).stdout
    for name in tracked.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, work / name)
    _configure(target, work)
    # A repository of its own: tests that copy the checkout list its files with `git ls-files --others` from where
    # they run (mutmut's mutants/); inside the work tree's ignored build/ they would find none.
    subprocess.run(["git", "init", "-q"], cwd=work, check=True, capture_output=True)
    return work


def _mutmut(work: Path, *args: str) -> str:
    # mutmut reads its configuration from the working directory and puts its mutated copy first on sys.path; the
    # packages it does not copy (benchmarks, the unmutated ones) come from the venv's editable install.
    # A failed `run` (the tests failing on the unmutated code, no test reaching a mutated function) leaves every
    # mutant "not checked": raised here, or they would be counted as survivors.
    done = subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=work, capture_output=True, text=True)
    if done.returncode != 0:
        output = done.stdout + done.stderr
        raise RuntimeError(f"mutmut {' '.join(args[:3])} failed ({done.returncode}) in {work}: {output[-2000:]}")
    return done.stdout + done.stderr if args[0] == "run" else done.stdout


_DIFFS = """
import json, sys
from mutmut.mutation.diff_apply import find_mutant, get_diff_for_mutant
print(json.dumps({name: get_diff_for_mutant(name, path=find_mutant(name).path) for name in json.load(sys.stdin)}))
"""


def _diffs(work: Path, names: list[str]) -> dict[str, str]:
    """The unified diff of each mutant of ``names`` (what ``mutmut show`` prints), from one process in ``work`` (a
    ``mutmut show`` per survivor started a Python each: 10 minutes for 400 survivors at a load of 7). Uses mutmut
    3.8.1's own ``mutmut.mutation.diff_apply.find_mutant`` and ``get_diff_for_mutant``, which ``show`` calls. Raises
    RuntimeError when that process fails."""
    if not names:
        return {}
    done = subprocess.run([sys.executable, "-c", _DIFFS], cwd=work, input=json.dumps(names), capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise RuntimeError(f"reading the diffs of {len(names)} mutants failed in {work}: {done.stderr[-2000:]}")
    found: dict[str, str] = json.loads(done.stdout)
    return found


_RESULT = re.compile(r"^\s*(?P<name>\S+): (?P<status>.+?)\s*$")


def run_target(target: Target, max_children: int, equivalent: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Run mutmut on `target`; return per module: counts, score and the survivors (name, change, equivalent-why)."""
    work = prepare(target)
    start = time.monotonic()
    run = _mutmut(work, "run", "--max-children", str(max_children), *target.mutant_globs())
    return {**collect(target, work, time.monotonic() - start, equivalent, run), "run": "full"}


def rerun_survivors(target: Target, max_children: int, equivalent: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Run again, in the scratch copy of the last `run_target` of `target`, only the mutants that survived it, with
    the work tree's current test files copied in and the target's current test list configured (the tests written
    to kill them, in new files too; mutmut finds the new tests and maps them to the functions they reach before it
    runs). When the list itself changed, mutmut forgets every verdict and all the mutants run again. Returns what
    `collect` returns, `seconds` the re-run's and `run` "survivors again"."""
    work = SCRATCH / target.name
    survivors = [r["name"] for r in _target_results(target, work) if r["status"] not in ("killed", "timeout")]
    for name in subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "tests"],
                               cwd=ROOT, check=True, capture_output=True).stdout.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, work / name)
    # This module is every mutant's pytest plugin: mutmut imports it from its copy (mutants/), made by the first run.
    plugin = Path(__file__).resolve().relative_to(ROOT)
    for copy in (work / plugin, work / "mutants" / plugin):
        if copy.parent.is_dir():
            shutil.copy2(ROOT / plugin, copy)
    # Test files added to the target's list since the run are selected too; mutmut then drops every verdict (a
    # change of its test selection resets them all), so every mutant runs again, not only the survivors.
    everything = _configure(target, work)
    start = time.monotonic()
    run = _mutmut(work, "run", "--max-children", str(max_children), *([] if everything else survivors)) \
        if everything or survivors else ""
    return {**collect(target, work, time.monotonic() - start, equivalent, run), "run": "survivors again"}


def _results(work: Path) -> list[dict[str, str]]:
    return [m.groupdict() for line in _mutmut(work, "results", "--all", "true").splitlines()
            if (m := _RESULT.match(line))]


def collect_stopped(target: Target, max_children: int, equivalent: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """What the last run of `target` checked before it was stopped (its scratch copy's results; `max_children` is
    unused). `seconds` is the span from the scratch's creation to mutmut's last recorded result; `run` says
    "stopped", and each module counts its mutants not checked."""
    work = SCRATCH / target.name
    metas = list((work / "mutants").rglob("*.meta"))
    seconds = max(m.stat().st_mtime for m in metas) - (work / "pyproject.toml").stat().st_mtime if metas else 0.0
    return {**collect(target, work, seconds, equivalent), "run": "stopped"}


def _target_results(target: Target, work: Path) -> list[dict[str, str]]:
    # Only the mutants of `target.functions` when it names some (mutmut lists the others as "not checked").
    return [r for r in _results(work)
            if not target.functions or any(fnmatch.fnmatch(r["name"], g) for g in target.mutant_globs())]


def collect(target: Target, work: Path, seconds: float, equivalent: dict[str, list[dict[str, Any]]],
            run: str = "") -> dict[str, Any]:
    """Per module of `target`, from mutmut's results in `work` (a scratch copy after `mutmut run`): mutants,
    killed, timeout, survived, reached by no test, the equivalent survivors (with why) and the others (with their
    diff), the mutants not checked (a run stopped early) and the score killed / (mutants checked - equivalent);
    `seconds` is recorded as the run's wall time."""
    results = _target_results(target, work)
    if not results:
        raise RuntimeError(f"mutmut produced no mutants for {target.name} (see {work}): {run[-2000:]}")
    files = sorted(str(p.relative_to(work)) for pattern in target.mutate for p in work.glob(pattern))
    modules = sorted((module_of(f) for f in files), key=len, reverse=True)
    per_module: dict[str, dict[str, Any]] = {}
    diffs = _diffs(work, [r["name"] for r in results if r["status"] not in ("killed", "timeout", "not checked")])
    for result in results:
        module = next(m for m in modules if result["name"].startswith(m + "."))
        entry = per_module.setdefault(module, {"mutants": 0, "killed": 0, "timeout": 0, "survived": 0,
                                               "no_tests": 0, "not_checked": 0, "equivalent": [], "survivors": []})
        entry["mutants"] += 1
        status = result["status"]
        if status == "not checked":  # a run stopped before it reached them (`--collect`)
            entry["not_checked"] += 1
            continue
        if status in ("killed", "timeout"):
            entry["killed" if status == "killed" else "timeout"] += 1
            continue
        change = change_of(diffs[result["name"]])
        why = is_equivalent(module, change, equivalent)
        if why is not None:
            entry["equivalent"].append({"mutant": result["name"], "change": change, "why": why})
            continue
        entry["no_tests" if status == "no tests" else "survived"] += 1
        entry["survivors"].append({"mutant": result["name"], "status": status, "change": change})
    for entry in per_module.values():
        judged = entry["mutants"] - entry["not_checked"] - len(entry["equivalent"])
        entry["score"] = round((entry["killed"] + entry["timeout"]) / judged, 4) if judged else 1.0
    return {"seconds": round(seconds, 1), "modules": dict(sorted(per_module.items()))}


def report(name: str, outcome: dict[str, Any]) -> None:
    """Print one target's scores and its survivors."""
    print(f"-- {name} ({outcome['seconds']} s)")
    for module, entry in outcome["modules"].items():
        print(f"   {module}: score {entry['score']:.1%} ({entry['killed'] + entry['timeout']} killed of "
              f"{entry['mutants']}, {len(entry['equivalent'])} equivalent, {entry['survived']} survived, "
              f"{entry['no_tests']} reached by no test"
              + (f"; {entry['not_checked']} not checked: the run was stopped" if entry.get("not_checked") else "")
              + ")")
        for survivor in entry["survivors"]:
            print(f"      {survivor['status']}: {survivor['mutant']}: {' | '.join(survivor['change'])}")


def main(argv: list[str] | None = None) -> int:
    """Run the selected targets; print and (with --write) record the scores. Returns 1 when a target left a
    survivor not judged equivalent, else 0."""
    parser = Parser(prog="python -m kueue_cohorts.benchmarks.mutation", description=summary(__doc__))
    add_write_flag(parser)
    names = [t.name for t in TARGETS]
    parser.add_argument("--only", nargs="+", choices=names, default=[t.name for t in TARGETS if t.by_default],
                        metavar="TARGET", help=f"run only these ({', '.join(names)}; by default all but "
                        f"{', '.join(t.name for t in TARGETS if not t.by_default)})")
    parser.add_argument("--max-children", type=int, default=2, help="mutants run at once (default 2)")
    parser.add_argument("--survivors-again", action="store_true",
                        help="run only the survivors of the last run of each target again, with the current tests")
    parser.add_argument("--collect", action="store_true",
                        help="run nothing: record what the last run of each target checked before it was stopped")
    args = parser.parse_args(argv)
    equivalent = load_equivalent()
    command = " ".join(["python -m kueue_cohorts.benchmarks.mutation", *(sys.argv[1:] if argv is None else argv)])
    outcomes = {}
    for target in TARGETS:
        if target.name in args.only:
            run = collect_stopped if args.collect else rerun_survivors if args.survivors_again else run_target
            outcomes[target.name] = {**run(target, args.max_children, equivalent), "measured_at": utc_now(),
                                     "load_average": load_average(), "command": command}
            report(target.name, outcomes[target.name])
    path = ROOT / "kueue_cohorts" / "benchmarks" / "results" / "mutation.json"
    previous = json.loads(path.read_text())["targets"] if path.exists() else {}
    save("mutation", {"measured_at": utc_now(), "load_average": load_average(), "tool": "mutmut 3.8.1",
                      "command": command, "targets": {**previous, **outcomes}}, args.write)
    left = sum(e["survived"] + e["no_tests"] for o in outcomes.values() for e in o["modules"].values())
    return 1 if left else 0


if __name__ == "__main__":
    raise SystemExit(main())
