"""``python -m kueue_cohorts.cohorts trace synth`` and ``python -m kueue_cohorts.cohorts whatif``: a trace for a stack,
replayed on a quota change
against the base ref, offline; bad input exits 2 with one message."""
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kueue_cohorts.cohorts.cli import main
from tests.helpers import STACKS


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out=out, err=err, sleep=lambda s: None)
    return code, out.getvalue(), err.getvalue()


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c",
                    "commit.gpgsign=false", *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    """A git repo with the staging stack file committed."""
    root = tmp_path / "repo"
    (root / "stacks").mkdir(parents=True)
    shutil.copy(STACKS / "Pulumi.staging.yaml", root / "stacks" / "Pulumi.staging.yaml")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    return root


def _set_inference_gpus(stack_file, gpus):
    doc = yaml.safe_load(stack_file.read_text())
    doc["config"]["kueue-cohorts:inferenceTraining"]["inference"]["nominalQuota"]["nvidia.com/gpu"] = str(gpus)
    doc["config"]["kueue-cohorts:inferenceTraining"]["inference"]["services"][0]["maxReplicas"] = gpus
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))


def test_synth_then_whatif_calls_out_inference_that_waits_with_a_smaller_quota(repo, tmp_path):
    stack_file = repo / "stacks" / "Pulumi.staging.yaml"
    trace_file = tmp_path / "week.jsonl"
    code, _, err = _run(["trace", "synth", "--stack-file", str(stack_file), "--days", "2", "--seed", "7",
                         "--out", str(trace_file)])
    assert code == 0, err
    assert trace_file.read_text().startswith('{"type":"trace","horizonSeconds":172800.0')

    code, out, err = _run(["whatif", "--stack-file", str(stack_file), "--trace", str(trace_file), "--base", "HEAD",
                           "--repo", str(repo)])
    assert code == 0, err  # the same quotas: nothing gets worse
    assert "No inference waits longer with this change." in out

    _set_inference_gpus(stack_file, 2)
    chart = tmp_path / "chart.html"
    code, out, err = _run(["whatif", "--stack-file", str(stack_file), "--trace", str(trace_file), "--base", "HEAD",
                           "--repo", str(repo), "--chart", str(chart)])
    assert code == 1, err
    assert out.index("> [!CAUTION]") < out.index("| queue |")
    assert "> - inference on serving-inference-cq: 15 workload(s) never admitted (base: 1)" in out
    assert chart.read_text().startswith("<!DOCTYPE html>")


def test_whatif_without_a_base_reports_the_head_alone(tmp_path):
    trace_file = tmp_path / "t.jsonl"
    trace_file.write_text('{"name": "r1", "submitSeconds": 0, "namespace": "c12-inference", '
                          '"localQueue": "c12-inference-lq", "kind": "inference", "requests": {"cpu": 1}}\n')
    code, out, err = _run(["whatif", "--stack", "dev", "--trace", str(trace_file)])
    assert code == 0, err
    assert "replayed on the head quotas" in out and "`c12-inference-cq` (inference) | 1 |" in out


@pytest.mark.parametrize("trace_text, message", [
    ("not json\n", "invalid trace"),
    ('{"name": "x"}\n', "submitSeconds"),
])
def test_a_bad_trace_exits_2_with_every_problem(tmp_path, trace_text, message):
    trace_file = tmp_path / "t.jsonl"
    trace_file.write_text(trace_text)
    code, out, err = _run(["whatif", "--stack", "dev", "--trace", str(trace_file)])
    assert code == 2 and out == "" and message in err and err.startswith("cohorts: invalid trace")


def test_an_unknown_base_ref_and_a_stack_the_simulator_cannot_model_exit_2(repo, tmp_path):
    stack_file = repo / "stacks" / "Pulumi.staging.yaml"
    trace_file = tmp_path / "t.jsonl"
    _run(["trace", "synth", "--stack-file", str(stack_file), "--days", "0.1", "--out", str(trace_file)])
    code, _, err = _run(["whatif", "--stack-file", str(stack_file), "--trace", str(trace_file), "--base", "nope",
                         "--repo", str(repo)])
    assert code == 2 and "nope" in err
    doc = yaml.safe_load(stack_file.read_text())
    doc["config"]["kueue-cohorts:kueue"]["featureGates"] = {"PrioritySortingWithinCohort": False}
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, _, err = _run(["whatif", "--stack-file", str(stack_file), "--trace", str(trace_file)])
    assert code == 2 and "cannot model this stack" in err and "PrioritySortingWithinCohort" in err


def test_lowering_a_quota_under_what_runs_is_the_first_warning_and_nothing_running_is_lost(repo, tmp_path):
    stack_file = repo / "stacks" / "Pulumi.staging.yaml"
    trace_file = tmp_path / "now.jsonl"
    lines = [{"type": "trace", "horizonSeconds": 7200}]
    lines += [{"name": f"replica-{i}", "submitSeconds": 0, "namespace": "serving", "localQueue": "inference",
               "kind": "inference", "priorityClass": "serving-inference",
               "requests": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"}, "runningSinceSeconds": -600,
               "durationSeconds": 600 + 1800 * (i + 1)} for i in range(4)]
    lines += [{"name": "new", "submitSeconds": 60, "namespace": "serving", "localQueue": "inference",
               "kind": "inference", "priorityClass": "serving-inference",
               "requests": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"}, "durationSeconds": 60}]
    trace_file.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    _set_inference_gpus(stack_file, 2)
    code, out, err = _run(["whatif", "--stack-file", str(stack_file), "--trace", str(trace_file), "--base", "HEAD",
                           "--repo", str(repo), "-o", "json"])
    assert code == 1, err
    doc = json.loads(out)
    assert doc["alerts"][0].startswith("`serving-inference-cq` quota below its current use: 4 nvidia.com/gpu in "
                                       "flavor ")
    assert "nominalQuota 2 (base " in doc["alerts"][0]
    assert doc["alerts"][0].endswith("drains 60.0 min after the change in this trace")  # the second ends at 3600 s
    head = next(q["head"] for q in doc["queues"] if q["key"] == "serving-inference-cq")
    assert head["preempted"] == 0 and head["never_admitted"] == 0  # the running replicas keep running


@pytest.mark.parametrize("gates", [{"PrioritySortingWithinCohort": False}, {"FlavorFungibility": False},
                                   {"PrioritySortingWithinCohort": False, "FlavorFungibility": False}])
def test_a_refused_stack_names_the_stack_key_to_change(repo, tmp_path, gates):
    stack_file = repo / "stacks" / "Pulumi.staging.yaml"
    trace_file = tmp_path / "t.jsonl"
    _run(["trace", "synth", "--stack-file", str(stack_file), "--days", "0.1", "--out", str(trace_file)])
    doc = yaml.safe_load(stack_file.read_text())
    doc["config"]["kueue-cohorts:kueue"]["featureGates"] = gates
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, _, err = _run(["whatif", "--stack-file", str(stack_file), "--trace", str(trace_file)])
    assert code == 2
    for gate in gates:
        assert (f"  - kueue-cohorts:kueue.featureGates.{gate} (Kueue Configuration featureGates.{gate}) = false"
                in err), err


def test_whatif_without_a_demand_names_both_ways_to_give_one():
    """`kueue-cohorts whatif` takes --trace, --from-cluster or both; neither is a usage error (exit 2), before any
    cluster is read."""
    proc = subprocess.run([str(Path(sys.executable).parent / "kueue-cohorts"), "whatif", "--stack-file",
                           str(STACKS / "Pulumi.staging.yaml")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "whatif needs a demand: --trace FILE, --from-cluster (what the live cluster runs now), or both" in \
        proc.stderr
