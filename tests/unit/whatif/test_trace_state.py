"""Issue 41 item 1: a demand trace replayed from the live cluster's state (`kueue-cohorts whatif --from-cluster`):
`Trace.starting_from` puts the state's running and pending workloads at 0 and the trace's after, keeps the trace's
horizon, and refuses a trace that already holds a workload of the state."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.whatif.trace import Trace, TraceError, TraceWorkload, WorkloadKind

GPU = {"nvidia.com/gpu": "1"}


def _running(name: str, since: float) -> TraceWorkload:
    return TraceWorkload(name=name, submit_seconds=0, namespace="train", local_queue="lq",
                         kind=WorkloadKind.TRAINING, requests=GPU, running_since_seconds=-since,
                         flavors={"nvidia.com/gpu": "default"})


def _demand(name: str, at: float) -> TraceWorkload:
    return TraceWorkload(name=name, submit_seconds=at, namespace="serve", local_queue="lq",
                         kind=WorkloadKind.INFERENCE, requests=GPU, duration_seconds=10)


@given(running=st.lists(st.floats(0, 1e5), max_size=5), demand=st.lists(st.floats(0, 500), max_size=5),
       horizon=st.floats(1, 1e4))
def test_the_state_comes_first_and_the_trace_keeps_its_horizon(running, demand, horizon):
    state = Trace.build([_running(f"live-{i}", s) for i, s in enumerate(running)], 1.0)
    trace = Trace.build([_demand(f"d-{i}", min(t, horizon)) for i, t in enumerate(demand)], horizon)
    merged = trace.starting_from(state)
    assert merged.horizon_seconds == horizon
    assert {w.name for w in merged.workloads} == {w.name for w in (*state.workloads, *trace.workloads)}
    live = [w for w in merged.workloads if w.name.startswith("live-")]
    assert all(w.submit_seconds == 0 and w.running_since_seconds is not None and w.flavors for w in live)
    assert [w.submit_seconds for w in merged.workloads] == sorted(w.submit_seconds for w in merged.workloads)


def test_an_empty_demand_is_the_state_alone():
    state = Trace.build([_running("live-0", 30)], 1.0)
    merged = Trace.build([], 1.0).starting_from(state)
    assert [w.name for w in merged.workloads] == ["live-0"] and merged.horizon_seconds == 1.0


@pytest.mark.parametrize("names", [["a"], ["a", "b"], ["x", "y", "z"]])
def test_a_trace_that_already_holds_a_live_workload_is_refused_naming_each(names):
    state = Trace.build([_running(n, 5) for n in names], 1.0)
    trace = Trace.build([_demand(n, 1) for n in names] + [_demand("other", 2)], 100.0)
    with pytest.raises(TraceError) as err:
        trace.starting_from(state)
    assert [(p.key, p.value) for p in err.value.problems] == [(f"workload {n}: name", n) for n in names]
    assert all(p.fix.startswith("a trace recorded from this cluster already begins with its state: drop "
                                "--from-cluster") for p in err.value.problems)
