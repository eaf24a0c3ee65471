"""The benchmarks' pure parts: results are rewritten only with --write, `python -m kueue_cohorts.benchmarks` passes
--write on,
the engine benchmark gives kubectl Pulumi's own objects under fresh names, reports growth against linear and where a
preview's time goes from the engine's gRPC log."""

from __future__ import annotations

import fnmatch
import json
import runpy
import shutil
import subprocess
import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts import benchmarks
from kueue_cohorts.benchmarks import cli as bench_main
from kueue_cohorts.benchmarks import mutation
from kueue_cohorts.benchmarks.engine import growth, grpc_breakdown, manifests_from_state, shared_pool_stack
from kueue_cohorts.benchmarks.sandbox import milestones


def test_save_writes_only_when_asked(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(benchmarks, "RESULTS_DIR", tmp_path / "benchmarks" / "results")
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    assert benchmarks.save("engine", {"a": 1}, write=False) is None
    assert not (tmp_path / "benchmarks" / "results" / "engine.json").exists()
    assert "--write" in capsys.readouterr().out
    path = benchmarks.save("engine", {"a": 1}, write=True)
    assert json.loads(path.read_text()) == {"a": 1}


@pytest.mark.parametrize("argv, passed", [([], []), (["--write"], ["--write"])])
def test_bench_runner_passes_write_on_to_every_benchmark(monkeypatch, argv, passed):
    seen = []
    monkeypatch.setattr(runpy, "run_module", lambda name, **_: seen.append((name, list(bench_main.sys.argv[1:]))))
    assert bench_main.main(argv) == 0
    assert seen == [(f"kueue_cohorts.benchmarks.{name}", passed) for name in bench_main.BENCHMARKS]


def test_bench_runner_reports_a_failure_and_runs_the_rest(monkeypatch):
    ran = []

    def run(name, **_):
        ran.append(name)
        if name == "kueue_cohorts.benchmarks.policy":
            raise SystemExit(1)

    monkeypatch.setattr(runpy, "run_module", run)
    assert bench_main.main(["--only", "policy", "engine"]) == 1
    assert ran == ["kueue_cohorts.benchmarks.policy", "kueue_cohorts.benchmarks.engine"]


def _state(prefix: str, tenants: int) -> list[dict]:
    """A stack state shaped like the engine's export: stack, provider and kubernetes resources with inputs."""
    res = [{"type": "pulumi:pulumi:Stack"}, {"type": "pulumi:providers:kubernetes", "inputs": {"kubeconfig": "x"}}]
    for i in range(tenants):
        t = f"{prefix}t{i:04d}"
        res.append({"type": "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue", "inputs": {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": f"{t}-lq", "namespace": t}, "spec": {"clusterQueue": f"{t}-cq"}}})
        res.append({"type": "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", "inputs": {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "__fieldManager": "pulumi-kubernetes-x",
            "metadata": {"name": f"{t}-cq"}, "spec": {"cohortName": f"{prefix}pool"}}})
        res.append({"type": "kubernetes:core/v1:Namespace", "inputs": {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": t, "labels": {"q": t}}}})
    return res


@given(tenants=st.integers(min_value=1, max_value=30), size=st.integers(min_value=1, max_value=9999))
def test_kubectl_gets_pulumis_objects_under_fresh_names(tenants, size):
    old, new = f"b{size}p-", f"b{size}k-"
    objects = manifests_from_state(_state(old, tenants), old, new)
    assert len(objects) == 3 * tenants  # every kubernetes object, not the stack nor the provider
    text = json.dumps(objects)
    assert old not in text and "__fieldManager" not in text
    kinds = [o["kind"] for o in objects]
    assert kinds == ["Namespace"] * tenants + ["ClusterQueue"] * tenants + ["LocalQueue"] * tenants
    assert {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"} == {
        f"{new}t{i:04d}" for i in range(tenants)}


def test_bench_stack_names_every_object_with_its_prefix():
    config = shared_pool_stack(3, "b3p-")["config"]
    pool = config["kueue-cohorts:sharedPool"]
    assert pool["cohort"].startswith("b3p-") and config["kueue-cohorts:resourceFlavor"]["name"].startswith("b3p-")
    assert [t["name"] for t in pool["tenants"]] == ["b3p-t0000", "b3p-t0001", "b3p-t0002"]
    assert config["kueue-cohorts:nodePools"][0]["capacity"]["nvidia.com/gpu"] == "3"


@given(base=st.floats(min_value=0.5, max_value=100), power=st.floats(min_value=0.5, max_value=2.5))
def test_growth_compares_with_linear(base, power):
    def fig(s):
        return {"s": s}

    rows = [{"tenants": n, "objects": 3 * n, "pulumi_up": fig(base * n ** power), "kubectl_apply": fig(base * n),
             "pulumi_preview_no_change": fig(base), "kubectl_diff": fig(base)} for n in (100, 500)]
    [g] = growth(rows)
    assert (g["from"], g["to"], g["objects_x"]) == (100, 500, 5.0)
    assert g["kubectl_apply"]["vs_linear"] == 1.0
    assert g["pulumi_up"]["vs_linear"] == pytest.approx(5 ** (power - 1), abs=0.01)
    assert g["kubectl_diff"]["vs_linear"] == 0.2


@given(st.lists(st.tuples(st.sampled_from(["/pulumirpc.ResourceProvider/Check", "/pulumirpc.ResourceProvider/Diff",
                                           "/pulumirpc.Analyzer/Analyze", "/pulumirpc.ResourceMonitor/RegisterResource",
                                           "/pulumirpc.Engine/Log", "/pulumirpc.Analyzer/AnalyzeStack"]),
                          st.integers(min_value=0, max_value=5 * 10**9)), max_size=40))
def test_grpc_breakdown_sums_completed_calls_per_method(tmp_path_factory, calls):
    log = tmp_path_factory.mktemp("grpc") / "grpc.jsonl"
    lines = ["not json", json.dumps({"no": "method"}),
             json.dumps({"method": "/pulumirpc.ResourceMonitor/RegisterResource", "duration": 2**63 - 1})]
    for method, nanos in calls:
        lines.append(json.dumps({"method": method, "progress": "request_started", "timestamp": "t"}))
        lines.append(json.dumps({"method": method, "progress": "response_completed", "duration": nanos}))
    log.write_text("\n".join(lines) + "\n")
    expected: dict[str, list] = {}
    for method, nanos in calls:
        name = method.rsplit("/", 1)[-1]
        if name != "Log":  # lasts the whole run
            expected.setdefault(name, [0, 0.0])
            expected[name][0] += 1
            expected[name][1] += nanos / 1e9
    found = grpc_breakdown(log)
    assert {m: v["calls"] for m, v in found.items()} == {m: n for m, (n, _) in expected.items()}
    assert all(abs(found[m]["s"] - round(t, 2)) < 0.011 for m, (_, t) in expected.items())
    assert [v["s"] for v in found.values()] == sorted((v["s"] for v in found.values()), reverse=True)


@pytest.mark.parametrize("name", ["toolchain", "policy", "planning", "trainjob", "whatif", "whatif_agreement"])
def test_help_describes_the_benchmark_in_whole_sentences(name, capsys):
    """`python -m kueue_cohorts.benchmarks.<name> --help` shows the docstring's whole first paragraph: its first line
    alone stopped
    mid-sentence ("an official release archive against a")."""
    module = __import__(f"kueue_cohorts.benchmarks.{name}", fromlist=["main"])
    with pytest.raises(SystemExit) as done:
        module.main(["--help"])
    assert done.value.code == 0
    description = " ".join(capsys.readouterr().out.split("\n\n")[1].split())
    assert description == benchmarks.summary(module.__doc__)
    assert description.endswith((".", ")")), description


def test_summary_is_the_first_paragraph_on_one_line():
    assert benchmarks.summary("One line\nand its end.\n\nMore.") == "One line and its end."
    assert benchmarks.summary(None) == ""


# --- benchmarks/mutation.py: its pure parts (the mutation runs themselves belong to make bench) ------------------


def test_mutation_survivors_are_matched_to_their_equivalence_by_module_and_changed_lines():
    diff = ("# components.settings.quantity.x__canonical__mutmut_11: survived\n--- components/settings/quantity.py\n"
            "+++ components/settings/quantity.py\n@@ -3,7 +3,7 @@\n     number = parse(value)\n"
            '-    sign = "-" if number < 0 else ""\n+    sign = "-" if number <= 0 else ""\n'
            "     magnitude = abs(number)\n")
    change = mutation.change_of(diff)
    assert change == ['- sign = "-" if number < 0 else ""', '+ sign = "-" if number <= 0 else ""']
    listed = {"kueue_cohorts.components.settings.quantity": [{"change": change, "why": "zero returned above"}]}
    assert mutation.is_equivalent("kueue_cohorts.components.settings.quantity", change, listed) == "zero returned above"
    assert mutation.is_equivalent("kueue_cohorts.policy.rules.quantities", change, listed) is None
    assert mutation.is_equivalent("kueue_cohorts.components.settings.quantity", change[:1], listed) is None
    assert mutation.module_of("kueue_cohorts/trainer/checkpoints.py") == "kueue_cohorts.trainer.checkpoints"


def test_every_equivalent_mutant_names_a_mutated_module_and_says_why():
    listed = mutation.load_equivalent()
    mutated = {mutation.module_of(str(p.relative_to(mutation.ROOT))) for t in mutation.TARGETS
               for pattern in t.mutate for p in mutation.ROOT.glob(pattern)}
    assert listed, "the checked-in file lists the equivalent survivors"
    for module, entries in listed.items():
        assert module in mutated
        assert entries
        for entry in entries:
            assert [line[:2] for line in entry["change"]].count("- ") >= 1 and len(entry["why"]) > 20


def test_a_mutmut_run_that_fails_on_the_unmutated_code_is_an_error_not_a_list_of_survivors(tmp_path):
    """mutmut leaves every mutant "not checked" when its first pass of the tests fails (a test that fails in the
    scratch copy): the benchmark raises with mutmut's output instead of counting them all as survivors."""
    (tmp_path / "pyproject.toml").write_text('[tool.mutmut]\nsource_paths = ["pkg"]\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("def f(x):\n    return x + 1\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_f.py").write_text("from pkg import f\n\n\ndef test_f():\n    assert f(1) == 3\n")
    with pytest.raises(RuntimeError) as failed:
        mutation._mutmut(tmp_path, "run", "--max-children", "1")
    assert str(failed.value).startswith(f"mutmut run --max-children 1 failed (1) in {tmp_path}: ")
    assert "failed to collect stats" in str(failed.value)


def test_a_stopped_run_records_what_it_checked_and_counts_the_rest_apart(tmp_path, monkeypatch):
    """`--collect` after a run stopped partway (here: mutmut asked for one function's mutants only): the mutants it
    never reached are "not checked", counted apart and left out of the score, not listed as survivors."""
    (tmp_path / "pyproject.toml").write_text('[tool.mutmut]\nsource_paths = ["pkg"]\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text("def f(x):\n    return x + 1\n\n\ndef g(x):\n    return x * 3\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_mod.py").write_text(
        "from pkg.mod import f, g\n\n\ndef test_f():\n    assert f(1) == 2\n\n\ndef test_g():\n    assert g(2) == 6\n")
    mutation._mutmut(tmp_path, "run", "--max-children", "1", "pkg.mod.x_f__mutmut_*")
    monkeypatch.setattr(mutation, "SCRATCH", tmp_path.parent)
    outcome = mutation.collect_stopped(mutation.Target(tmp_path.name, ("pkg/mod.py",), ("tests",)), 1, {})
    entry = outcome["modules"]["pkg.mod"]
    assert (entry["not_checked"], entry["survived"], entry["survivors"]) == (entry["mutants"] - entry["killed"], 0, [])
    assert entry["killed"] >= 1 and entry["not_checked"] >= 1 and entry["score"] == 1.0
    assert outcome["run"] == "stopped" and outcome["seconds"] >= 0


def test_the_scratch_copy_lists_its_files_to_git_as_the_checkout_does(tmp_path, monkeypatch):
    """Tests that copy the checkout (tests/prsummary/gitrepo.py) run `git ls-files --others --exclude-standard` from
    the scratch's mutants/ directory: the scratch is a repository of its own, so they find the files there (inside the
    work tree's ignored build/ they found none, and the settings-checks target's first test pass failed)."""
    monkeypatch.setattr(mutation, "SCRATCH", tmp_path)
    work = mutation.prepare(mutation.Target("probe", ("kueue_cohorts/trainer/checkpoints.py",), ("tests/trainer",)))
    (work / "mutants" / "kueue_cohorts" / "trainer").mkdir(parents=True)
    shutil.copy2(work / "kueue_cohorts" / "trainer" / "checkpoints.py",
                 work / "mutants" / "kueue_cohorts" / "trainer" / "checkpoints.py")
    listed = subprocess.run(["git", "-C", str(work / "mutants"), "ls-files", "--cached", "--others",
                             "--exclude-standard"], check=True, capture_output=True, text=True).stdout.split()
    assert listed == ["kueue_cohorts/trainer/checkpoints.py"]
    assert 'only_mutate = ["kueue_cohorts/trainer/checkpoints.py"]' in (work / "pyproject.toml").read_text()


def test_a_narrowed_target_reaches_mutmut_as_its_settings():
    """The per-target narrowing (issue 42): the deselected tests follow pytest's --deselect, the stack depth and the
    CPU timeout are mutmut's own keys, and `functions` become the mutant-name patterns of those functions only."""
    target = mutation.Target("probe", ("kueue_cohorts/components/checks/settings_rules.py",), ("tests/a.py", "tests/b"),
                             max_stack_depth=4, deselect=("tests/a.py::test_slow",),
                             functions=("kueue_cohorts.components.checks.settings_rules.check",
                                        "kueue_cohorts.components.checks.settings_rules._preemption"))
    config = tomllib.loads(mutation._mutmut_config(target, ["kueue_cohorts/components/checks/settings_rules.py"],
                                                   ["kueue_cohorts", "tests", "stacks"]))["tool"]["mutmut"]
    assert config["pytest_add_cli_args_test_selection"] == ["tests/a.py", "tests/b", "--deselect",
                                                             "tests/a.py::test_slow"]
    assert (config["max_stack_depth"], config["timeout_multiplier"], config["timeout_constant"]) == (4, 3.0, 2.0)
    assert (config["source_paths"], config["also_copy"]) == (["kueue_cohorts"], ["stacks", "tests"])
    globs = target.mutant_globs()
    assert globs == ["kueue_cohorts.components.checks.settings_rules.x_check__mutmut_*",
                     "kueue_cohorts.components.checks.settings_rules.x__preemption__mutmut_*"]
    named = [f"kueue_cohorts.components.checks.settings_rules.{name}" for name in (
        "x_check__mutmut_3", "x__preemption__mutmut_1", "x_check_flavors__mutmut_2", "x_checks__mutmut_1")]
    assert [n for n in named if any(fnmatch.fnmatch(n, g) for g in globs)] == named[:2]
    assert mutation.Target("all", ("x.py",), ("tests",)).mutant_globs() == []
    assert {t.name for t in mutation.TARGETS if not t.by_default} == {"settings-checks-all", "rule-book"}


def test_the_reclaim_round_marks_the_victims_pod_gone_and_the_inference_pod_running():
    """benchmarks.sandbox (issue 37): after a reclaim the inference pod runs only once the victim's pod is gone (its
    grace period honoured); both milestones are read from the Pod watch events of the round."""

    def pod(owner: str, phase: str) -> dict:
        return {"metadata": {"ownerReferences": [{"uid": owner}]}, "status": {"phase": phase}}

    events = [(10.0, "Pod", "ADDED", pod("serve", "Pending")),
              (10.5, "Workload", "MODIFIED", {"metadata": {"labels": {"kueue.x-k8s.io/job-uid": "serve"}},
                                              "status": {"conditions": [{"type": "Admitted", "status": "True"}]}}),
              (70.0, "Pod", "DELETED", pod("train", "Running")),
              (70.4, "Pod", "MODIFIED", pod("serve", "Running"))]
    seen = milestones(events, 10.0, "serve", "train")
    assert (seen["admitted"], seen["victim_pod_gone"], seen["pod_running"]) == (0.5, 60.0, 60.4)


def test_the_survivors_diffs_are_what_mutmut_show_prints(tmp_path):
    """`collect` reads every survivor's diff from one process (`_diffs`, mutmut's own diff functions) instead of one
    `mutmut show` each: the changed lines are the same as `mutmut show`'s."""
    (tmp_path / "pyproject.toml").write_text('[tool.mutmut]\nsource_paths = ["pkg"]\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text("def f(x):\n    return x + 1 if x > 0 else 0\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_mod.py").write_text("from pkg.mod import f\n\n\ndef test_f():\n    assert f(5) == 6\n")
    mutation._mutmut(tmp_path, "run", "--max-children", "1")
    survivors = [r["name"] for r in mutation._results(tmp_path) if r["status"] == "survived"]
    assert len(survivors) >= 2
    diffs = mutation._diffs(tmp_path, survivors)
    assert sorted(diffs) == sorted(survivors)
    for name in survivors:
        assert mutation.change_of(diffs[name]) == mutation.change_of(mutation._mutmut(tmp_path, "show", name))
        assert mutation.change_of(diffs[name])[0] == "- return x + 1 if x > 0 else 0"
    assert mutation._diffs(tmp_path, []) == {}


def test_each_policy_and_vocabulary_module_of_its_own_is_judged_by_its_tests_and_its_users():
    """policy-<policy>: the policy's own test module and its topic files; vocabulary-<module>: its own tests and the
    test modules of each policy that imports it (relative imports, as the pack stands alone), pods-fit-nodes' left
    to rules-placement."""
    targets = {t.name: t for t in mutation.TARGETS}
    runtime_paths = "tests/policy/rules/test_checkpoint_safe_runtime_paths.py"
    assert runtime_paths in targets["rules-runtime"].tests
    manager = targets["policy-kueue-manager-config"]
    assert manager.mutate == ("kueue_cohorts/policy/rules/kueue_manager_config.py",)
    assert manager.tests[0] == "tests/policy/rules/test_kueue_manager_config.py" and all(
        t.startswith("tests/policy/rules/test_kueue_manager_config") for t in manager.tests)
    assert mutation._users("kueue_counts") == ["cluster_queue_covers_pod_resources", "kueue_manager_config"]
    assert "pods_fit_nodes" in mutation._users("node_pools")
    assert not any("pods_fit_nodes" in t for t in targets["vocabulary-node-pools"].tests)
    durations = targets["vocabulary-durations"].tests
    assert durations[:2] == ("tests/policy/vocabulary/test_durations.py",
                             "tests/policy/vocabulary/test_durations_go_table.py")
    assert runtime_paths in durations and "tests/policy/rules/test_reclaim_within_budget.py" in durations
    covered = {m for t in mutation.TARGETS for m in t.mutate if t.by_default}
    policies = {f"kueue_cohorts/policy/rules/{p.name}" for p in (mutation.ROOT / "kueue_cohorts/policy/rules").glob(
        "*.py") if p.name != "__init__.py"}
    assert policies <= covered, sorted(policies - covered)
    with pytest.raises(ValueError):
        mutation.policy_target("no_such_policy")
