"""kueue-manager-config and inference-reclaim-unblocked read the manager's `--feature-gates` through one reader
(kueue_cohorts/policy/rules/vocabulary/kueue_manager.py), as the manager gets it: the kubelet starts `command` then
`args` with no shell between (core/v1 Container.command: "not executed within a shell"), Kueue v0.19.2
`cmd/kueue/main.go` reads its flags with Go's standard `flag` package (`-flag` or `--flag`, `=value` or the next
word, the last of a repeated string flag kept), and a `sh -c` script is split by the shell. Before, the two policies
read it two ways: kueue-manager-config split any argument holding a space as a shell would and judged every repeated
flag; inference-reclaim-unblocked took no single string apart and read only Deployments named kueue."""
from __future__ import annotations

import pytest

from kueue_cohorts.policy.rules.kueue_manager_config import check_kueue_manager_config
from kueue_cohorts.policy.rules.vocabulary.kueue_manager import chart_gate, feature_gate_flags, manager_gate
from tests.policy.fixtures import kube
from tests.policy.rules.test_kueue_manager_config_mutants import _container, _manager

GATE = "FairSharingPreemptWithinNominal"
C0 = "spec.template.spec.containers[0]"


@pytest.mark.parametrize("command, args, read", [
    # exec form: each element one argv word; the program's own name is not a flag
    (None, ["--zap-log-level=2 --feature-gates=A=true"], []),  # one word: --zap-log-level's value, no gates flag
    (None, ["--config", "/c.yaml", "--feature-gates=A=true"], [(f"{C0}.args[2]", "A=true")]),
    (["/manager", "-feature-gates", "A=false"], [], [(f"{C0}.command[1]", "A=false")]),
    (["--feature-gates=A=true"], [], []),  # command[0] is the program
    (["/manager", "--feature-gates"], ["A=true"], [(f"{C0}.command[1]", "A=true")]),  # command then args: one argv
    # repeated: the last is what the manager keeps
    (None, ["--feature-gates=A=true", "--feature-gates=B=false"], [(f"{C0}.args[1]", "B=false")]),
    (None, ["--feature-gates=A=true", "--feature-gates"], [(f"{C0}.args[1]", None)]),
    # a shell's script: split by the shell, after `exec` and the program
    (["/bin/sh", "-c", "exec /manager --zap-log-level=2 --feature-gates=A=true"], [],
     [(f"{C0}.command[2]", "A=true")]),
    (["bash", "-ec", "/manager --feature-gates 'A=true,B=false'"], [], [(f"{C0}.command[2]", "A=true,B=false")]),
    (["sh", "-c"], ["exec /manager --feature-gates=A=true"], [(f"{C0}.args[0]", "A=true")]),
    (["sh", "-c", "/manager --feature-gates='A=true"], [], []),  # the shell cannot split it: one word, no flag
])
def test_the_argv_is_the_one_the_manager_gets(command, args, read):
    assert list(feature_gate_flags(_manager(_container(args, command)))) == read


@pytest.mark.parametrize("args, gate", [
    (["--feature-gates=FairSharingPreemptWithinNominal=false"], False),
    (["--feature-gates=FairSharingPreemptWithinNominal=false", "--feature-gates=A=true"], None),  # replaced
    (["--feature-gates=FairSharingPreemptWithinNominal=false,Bogus"], None),  # Set fails: the manager stops
    (["--feature-gates"], None),
    (["--feature-gates=FairSharingPreemptWithinNominal=T"], True),
])
def test_the_gate_the_manager_runs_with(args, gate):
    assert manager_gate(_manager(_container(args)), GATE) is gate


def test_a_manager_known_by_its_image_is_read_by_both_policies():
    """A Deployment not named kueue whose image is Kueue's: both policies read its flags (inference-reclaim-unblocked
    read only Deployments named kueue)."""
    manager = _manager(_container(["--feature-gates=FairSharingPreemptWithinNominal=false"]), name="scheduler")
    assert manager_gate(manager, GATE) is False
    assert check_kueue_manager_config(_manager(_container(["--feature-gates=Bogus=true"]), name="scheduler"))


def test_only_the_flag_the_manager_keeps_is_judged():
    """An earlier `--feature-gates` the last one replaces never reaches featuregate.Set: its bad gate stops nothing."""
    found = check_kueue_manager_config(_manager(_container(["--feature-gates=Bogus=true",
                                                            "--feature-gates=PartialAdmission=true"])))
    assert found == []
    found = check_kueue_manager_config(_manager(_container(["--feature-gates=PartialAdmission=true",
                                                            "--feature-gates=Bogus=true"])))
    assert [v.field for v in found] == [f"{C0}.args[1]"]


def _chart(gates: object) -> object:
    return kube("kueue", {"apiVersion": "helm.sh/v3", "kind": "Chart", "metadata": {"name": "kueue"},
                          "chart": "kueue", "values": {"controllerManager": {"featureGates": gates}}})


@pytest.mark.parametrize("gates, gate", [
    ([{"name": GATE, "enabled": False}], False),
    ([{"name": GATE, "enabled": False}, {"name": GATE, "enabled": True}], True),  # the later pair wins in Set
    ([{"name": "TopologyAwareScheduling", "enabled": True}], None),
    ([{"name": GATE, "enabled": False}, {"name": "PartialAdmission", "enabled": "yes"}], None),  # %!t: no start
    ([{"name": GATE}], None),  # enabled missing renders %!t(<nil>)
])
def test_the_gate_the_chart_renders(gates, gate):
    """One reader of the chart's featureGates for both policies (inference-reclaim-unblocked kept the entries with a
    boolean and ignored the rest, though one bad entry stops the manager)."""
    assert chart_gate(_chart(gates), GATE) is gate
