"""The demand trace format (whatif/trace.py): round trip, every problem of a bad trace at once, the schema file, and the
seeded synthetic trace (whatif/synth.py)."""
import json
from collections import Counter

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.cohorts.target import load_stack
from kueue_cohorts.whatif import trace as trace_module
from kueue_cohorts.whatif.synth import synth
from kueue_cohorts.whatif.trace import SCHEMA_PATH, Trace, TraceError, TraceWorkload, WorkloadKind
from tests.helpers import STACKS


def _line(**fields):
    base = {"type": "workload", "name": "w1", "submitSeconds": 0, "namespace": "serving", "localQueue": "inference",
            "requests": {"nvidia.com/gpu": 1}}
    return json.dumps({**base, **fields})


def test_a_trace_round_trips_through_its_lines():
    trace = Trace.parse("\n".join([
        '{"type": "trace", "horizonSeconds": 7200, "description": "two workloads"}',
        _line(name="b", submitSeconds=10, kind="training", pods=2, durationSeconds=600,
              checkpointIntervalSeconds=60, terminationSeconds=30, priorityClass="serving-training"),
        _line(name="a", submitSeconds=10, requests={"cpu": "1000m", "memory": "2048Mi"}),
    ]))
    assert [w.name for w in trace.workloads] == ["a", "b"]  # submit order, ties by name
    assert trace.workloads[0].requests == {"cpu": "1", "memory": "2Gi"}  # canonical quantities
    assert trace.workloads[0].duration_seconds is None  # until deleted
    assert trace.horizon_seconds == 7200
    again = Trace.parse("\n".join(trace.lines()))
    assert again == trace


def test_every_problem_of_a_bad_trace_is_reported_at_once_with_its_line_and_key():
    text = "\n".join([
        _line(name="ok"),
        "not json",
        _line(name="Bad_Name", pods=0),
        _line(name="t", kind="inference", checkpointIntervalSeconds=60),
        _line(name="u", requests={"nvidia.com/gpu": "-1"}, extra=True),
        '{"type": "trace", "horizonSeconds": 5}',
    ])
    with pytest.raises(TraceError) as info:
        Trace.parse(text, "t.jsonl")
    keys = [p.key for p in info.value.problems]
    assert keys == ["t.jsonl:2", "t.jsonl:3 name", "t.jsonl:3 pods", "t.jsonl:4 (line)",
                    't.jsonl:5 requests.nvidia.com/gpu', "t.jsonl:5 extra", "t.jsonl:6 type"]
    message = str(info.value)
    assert "invalid trace t.jsonl: 7 problems" in message and "Fix:" in message


def test_names_are_unique_and_nothing_is_submitted_after_the_horizon():
    text = "\n".join(['{"type": "trace", "horizonSeconds": 5}', _line(name="a"), _line(name="a"),
                      _line(name="late", submitSeconds=6)])
    with pytest.raises(TraceError) as info:
        Trace.parse(text, "t.jsonl")
    rules = [p.rule for p in info.value.problems]
    assert rules == ["names must be unique in a trace", "is after the trace's horizonSeconds 5"]


def test_an_empty_trace_is_refused():
    with pytest.raises(TraceError, match="at least one workload"):
        Trace.parse("\n\n")


def test_the_schema_file_is_generated_from_the_models():
    assert SCHEMA_PATH.read_text() == trace_module.schema_text(), "run python -m kueue_cohorts.whatif.trace --write"
    assert trace_module.main([]) == 0


def test_the_schema_accepts_what_the_reader_accepts_and_refuses_what_it_refuses():
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.validate(json.loads(_line(kind="training", checkpointIntervalSeconds=60)), schema)
    jsonschema.validate({"type": "trace", "horizonSeconds": 60}, schema)
    for bad in ({"type": "workload", "name": "x"}, json.loads(_line(pods=0)), json.loads(_line(color="red")),
                json.loads(_line(requests={"cpu": "-1"}))):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


@given(st.lists(st.tuples(st.floats(0, 1e6), st.one_of(st.none(), st.floats(1, 1e5)), st.integers(1, 8),
                          st.sampled_from(list(WorkloadKind))), min_size=1, max_size=20))
def test_any_built_trace_reads_back_equal(rows):
    workloads = [TraceWorkload(name=f"w{i}", submit_seconds=submit, namespace="ns", local_queue="lq", kind=kind,
                               pods=pods, requests={"nvidia.com/gpu": "1"}, duration_seconds=duration)
                 for i, (submit, duration, pods, kind) in enumerate(rows)]
    trace = Trace.build(workloads)
    assert Trace.parse("\n".join(trace.lines())) == trace


def test_synth_is_seeded_diurnal_and_about_a_thousand_workloads_a_week():
    settings = load_stack(STACKS / "Pulumi.staging.yaml")
    one, same, other = synth(settings, seed=3), synth(settings, seed=3), synth(settings, seed=4)
    assert one == same and one != other
    assert one.horizon_seconds == 7 * 86400 and 700 <= len(one.workloads) <= 1300
    queues = Counter((w.namespace, w.local_queue, w.kind) for w in one.workloads)
    assert set(queues) == {("serving", "inference", WorkloadKind.INFERENCE),
                           ("fine-tuning", "training", WorkloadKind.TRAINING),
                           ("team-vision", "team-vision-lq", WorkloadKind.TRAINING),
                           ("team-speech", "team-speech-lq", WorkloadKind.TRAINING)}
    inference = [w for w in one.workloads if w.kind == WorkloadKind.INFERENCE]
    assert all(w.requests == {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"} for w in inference)  # the service
    assert all(w.priority_class == "serving-inference" for w in inference)

    def replicas_at(t):
        return sum(1 for w in inference if w.submit_seconds <= t
                   and (w.duration_seconds is None or w.submit_seconds + w.duration_seconds > t))
    weekday_afternoons = [replicas_at(d * 86400 + 16 * 3600) for d in range(5)]
    weekday_nights = [replicas_at(d * 86400 + 4 * 3600 + 1800) for d in range(5)]
    assert sum(weekday_afternoons) > sum(weekday_nights)  # the diurnal curve
    training = [w for w in one.workloads if w.kind == WorkloadKind.TRAINING]
    assert all(w.checkpoint_interval_seconds == 600 and w.duration_seconds for w in training)
    assert max(w.pods for w in training) <= 4  # never more than the training queue can ever hold


def test_synth_refuses_a_non_positive_length():
    with pytest.raises(ValueError, match="days"):
        synth(load_stack(STACKS / "Pulumi.dev.yaml"), days=0)
