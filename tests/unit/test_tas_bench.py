"""The TAS benchmark's pure parts (benchmarks/tas.py): the objects it applies (a hostname Topology named only by
flavors that have nodeLabels, as Kueue v0.19.2's CEL rule demands), each scenario's own nodes and names, the verdict
read from a Workload and a Pod, CPU seconds read from /proc/<pid>/stat, and the latency summaries."""
from __future__ import annotations

import json
import re
from typing import Any, Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.benchmarks.tas import (
    GPU,
    HOSTNAME,
    MODES,
    SCOPE_KEY,
    Flavor,
    Nodes,
    Queue,
    Work,
    cpu_seconds,
    deployment_manifest,
    flavor_manifest,
    node_manifests,
    percentiles,
    queue_manifests,
    ratio,
    scenarios,
    scope,
    topology_manifest,
    verdict,
)
from kueue_cohorts.policy.rules.vocabulary.objects import QUEUE_NAME_LABEL
from kueue_cohorts.sandbox import kwok
from tests.helpers import ROOT

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def test_the_topology_has_the_single_hostname_level():
    assert topology_manifest("t")["spec"] == {"levels": [{"nodeLabel": HOSTNAME}]}
    assert topology_manifest("t")["apiVersion"] == "kueue.x-k8s.io/v1beta2"


@pytest.mark.parametrize("flavor, topology, named", [
    (Flavor("gpu"), "topo", True), (Flavor("gpu", pool="a"), "topo", True), (Flavor("gpu"), None, False),
    (Flavor("other", labelled=False), "topo", False), (Flavor("other", labelled=False), None, False)])
def test_a_flavor_names_the_topology_only_with_node_labels(flavor, topology, named):
    spec = flavor_manifest("tas-on-x", flavor, topology)["spec"]
    assert ("topologyName" in spec) == named
    # Kueue v0.19.2 resourceflavor_types.go: "at least one nodeLabel is required when topology is set"
    assert "topologyName" not in spec or len(spec["nodeLabels"]) >= 1
    assert spec["tolerations"] == [{"key": SCOPE_KEY, "value": "tas-on-x", "effect": "NoSchedule",
                                    "operator": "Equal"}]
    assert ("nodeLabels" in spec) == flavor.labelled


def test_nodes_are_kwok_nodes_of_their_scope_with_a_hostname_label():
    nodes = node_manifests("tas-on-s", [Nodes("a", 2, 4, pool="a"), Nodes("b", 1, 1)])
    assert [n["metadata"]["name"] for n in nodes] == ["tas-on-s-a-0", "tas-on-s-a-1", "tas-on-s-b-0"]
    for node in nodes:
        labels = node["metadata"]["labels"]
        assert labels[HOSTNAME] == node["metadata"]["name"]
        assert labels[SCOPE_KEY] == "tas-on-s" and labels[kwok.NODE_LABEL[0]] == kwok.NODE_LABEL[1]
        assert node["metadata"]["annotations"] == {kwok.NODE_ANNOTATION[0]: kwok.NODE_ANNOTATION[1]}
        assert node["spec"]["taints"] == [{"key": SCOPE_KEY, "value": "tas-on-s", "effect": "NoSchedule"}]
    assert nodes[0]["metadata"]["labels"]["pool"] == "tas-on-s-a" and "pool" not in nodes[2]["metadata"]["labels"]
    assert nodes[0]["status"]["allocatable"][GPU] == "4" and nodes[2]["status"]["capacity"][GPU] == "1"


def test_a_queue_covers_its_gpus_with_cpu_and_memory_per_gpu():
    cq, lq = queue_manifests("tas-off-s", Queue("inference", "gpu", 3))
    flavor = cq["spec"]["resourceGroups"][0]["flavors"][0]
    assert flavor["name"] == "tas-off-s-gpu"
    assert {r["name"]: r["nominalQuota"] for r in flavor["resources"]} == {"cpu": "12", "memory": "48Gi", GPU: "3"}
    assert (lq["metadata"]["namespace"], lq["spec"]["clusterQueue"]) == ("tas-off-s", "tas-off-s-inference")


@pytest.mark.parametrize("work, queued, selector", [
    (Work("serve", "inference", 2), True, {SCOPE_KEY: "w"}),
    (Work("unqueued", None, 1), False, {SCOPE_KEY: "w"}),
    (Work("squatter", "other", 2, pool="a"), True, {SCOPE_KEY: "w", "pool": "w-a"})])
def test_a_deployment_carries_the_queue_label_on_its_pod_template_only_when_queued(work, queued, selector):
    pod = deployment_manifest("w", work)["spec"]["template"]
    assert (QUEUE_NAME_LABEL in pod["metadata"]["labels"]) == queued
    assert pod["spec"]["nodeSelector"] == selector
    assert pod["spec"]["containers"][0]["resources"]["requests"][GPU] == str(work.gpus)


def test_every_scenario_has_an_expectation_per_mode_for_each_inference_workload_and_short_names():
    found = scenarios()
    assert {s.harm for s in found} == {1, 2, 3}
    for sc in found:
        for mode in MODES:
            assert set(sc.expected[mode]) == {w.name for w in sc.inference}
            where = scope(mode, sc.name)
            names = [n["metadata"]["name"] for n in node_manifests(where, sc.nodes)]
            names += [f"{where}-{f.name}" for f in sc.flavors] + [f"{where}-{q.name}" for q in sc.queues]
            assert all(DNS_LABEL.match(n) and len(n) <= 63 for n in [where, *names])
        flavors = {f.name for f in sc.flavors}
        assert all(q.flavor in flavors for q in sc.queues)
        assert all(w.queue is None or w.queue in {q.name for q in sc.queues} for w in (*sc.before, *sc.inference))


def _wl(admitted: bool) -> dict:
    return {"status": {"conditions": [{"type": "Admitted", "status": "True" if admitted else "False"}]}}


@pytest.mark.parametrize("workload, pod, expected", [
    (None, None, "not-admitted"),
    (_wl(False), {"status": {"phase": "Pending"}}, "not-admitted"),
    (_wl(True), None, "admitted-pending"),
    (_wl(True), {"status": {"phase": "Pending"}}, "admitted-pending"),
    (_wl(True), {"status": {"phase": "Running"}}, "admitted-running")])
def test_verdict(workload, pod, expected):
    assert verdict(workload, pod) == expected


def test_cpu_seconds_reads_utime_and_stime_after_a_command_name_with_spaces_and_parens():
    rest = " ".join(["S", "1", "1", "1", "0", "-1", "4194560", "10", "0", "0", "0", "250", "150", "0", "0"])
    assert cpu_seconds(f"1816 (kue ue) (x)) {rest}", 100) == 4.0
    assert cpu_seconds(f"7 (kueue) {rest}", 50) == 8.0


@given(st.lists(st.floats(0, 1000, allow_nan=False), min_size=1, max_size=200))
def test_percentiles_are_ordered_and_taken_from_the_samples(samples):
    got = percentiles(samples)
    assert got["p50"] <= got["p95"] <= got["max"] == round(max(samples), 3)
    assert got["p95"] in {round(s, 3) for s in samples}


def test_percentiles_of_nothing_is_an_error():
    with pytest.raises(ValueError, match="no samples"):
        percentiles([])


@pytest.mark.parametrize("on, off, expected", [(2.0, 1.0, 2.0), (1.0, 3.0, 0.33), (1.0, 0.0, None)])
def test_ratio(on, off, expected):
    assert ratio(on, off) == expected


def latency_table(latency: Mapping[str, Any]) -> str:
    """The markdown table docs/placement.md quotes from a results document's ``latency`` part (``Bench.latency``):
    per figure, the medians off and on (seconds, CPU seconds) and the ratio on / off, each to 2 decimals."""
    rows = [("admission, p50 of the Jobs", "admitted_p50_s"), ("all 50 admitted", "all_admitted_s"),
            ("pod Running, p50 of the Jobs", "running_p50_s"), ("all 50 pods Running", "all_running_s"),
            ("Kueue manager CPU seconds per round", "kueue_cpu_s")]
    median, ratios = latency["median"], latency["ratio_on_over_off"]
    lines = [f"| figure (median of {len(latency['rounds']['on'])} rounds) | TAS off | TAS on | on / off |",
             "|---|---|---|---|"]
    lines += [f"| {label} | {median['off'][key]:.2f} | {median['on'][key]:.2f} | {ratios[key]:.2f} |"
              for label, key in rows]
    return "\n".join(lines)


def test_the_placement_page_quotes_the_recorded_latency_figures():
    """docs/placement.md stays true: its latency table is the one benchmarks/results/tas.json gives."""
    recorded = json.loads((ROOT / "kueue_cohorts" / "benchmarks" / "results" / "tas.json").read_text())
    table = latency_table(recorded["latency"])
    assert table.count("\n") == 6
    assert table in (ROOT / "docs" / "placement.md").read_text()
    assert recorded["measured_at"] in (ROOT / "docs" / "placement.md").read_text()
