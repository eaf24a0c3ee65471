"""Every bad trace is one line per problem at its file:line with the fix, never a traceback (issue 41, item 4): any
bytes, any encoding, any nesting, any size; LocalQueues and WorkloadPriorityClasses the stack does not have are
errors; the caps on line length and line count; through the reader, `what_if` and the `whatif` command (exit 2)."""
import io
import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kueue_cohorts.cohorts.cli import main
from kueue_cohorts.cohorts.target import load_stack
from kueue_cohorts.whatif.compare import what_if
from kueue_cohorts.whatif.trace import MAX_DEPTH, MAX_LINE_BYTES, MAX_LINES, Trace, TraceError
from tests.helpers import ROOT, STACKS

DEV_LINE = {"name": "r1", "submitSeconds": 0, "namespace": "c12-inference", "localQueue": "c12-inference-lq",
            "kind": "inference", "requests": {"cpu": 1}}


def _read(data: bytes, source="t.jsonl"):
    return Trace.parse_stream(io.BytesIO(data), source)


def _problems(data: bytes, source="t.jsonl"):
    with pytest.raises(TraceError) as info:
        _read(data, source)
    return info.value.problems


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out=out, err=err, sleep=lambda s: None)
    return code, out.getvalue(), err.getvalue()


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_any_bytes_read_as_a_trace_or_as_problems_each_at_its_line(data):
    try:
        _read(data)
    except TraceError as exc:
        assert exc.problems and all(p.key == "t.jsonl" or p.key.startswith("t.jsonl:") for p in exc.problems)
        assert all(p.fix for p in exc.problems)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(sorted(DEV_LINE) + ["pods", "durationSeconds", "priorityClass", "type",
                                                           "tolerations", "nodeSelector", "deletedSeconds"]),
                       json_values, max_size=4))
def test_any_field_values_read_or_give_problems_at_line_and_key(changes):
    line = json.dumps({**DEV_LINE, **changes}).encode()
    try:
        _read(b'{"type": "trace", "horizonSeconds": 100}\n' + line)
    except TraceError as exc:
        assert all(p.key.startswith("t.jsonl:") for p in exc.problems), exc.problems


@pytest.mark.parametrize("encoding, rule", [
    ("latin-1", "is not UTF-8 (byte 161 of the line)"),
    ("cp1252", "is not UTF-8 (byte 161 of the line)"),
    ("utf-16", "has NUL bytes: the file is UTF-16 or binary"),
    ("utf-16-be", "has NUL bytes: the file is UTF-16 or binary"),
    ("utf-32", "has NUL bytes: the file is UTF-16 or binary"),
])
def test_a_trace_not_in_utf8_is_named_at_its_line(encoding, rule):
    text = json.dumps({**DEV_LINE, "name": "r1"}) + "\n" + json.dumps({**DEV_LINE, "name": "r2",
                                                                        "description": "é"}, ensure_ascii=False)
    problems = _problems(text.encode(encoding))
    assert any(rule in p.rule and "save the trace as UTF-8" in p.fix for p in problems), problems
    assert all(p.key.startswith("t.jsonl:") for p in problems)


def test_a_utf8_byte_order_mark_is_read():
    trace = _read(b"\xef\xbb\xbf" + json.dumps(DEV_LINE).encode())
    assert [w.name for w in trace.workloads] == ["r1"]


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 50, 1_000, 30_000])
@pytest.mark.parametrize("where", ["requests", "tolerations", "extra"])
def test_a_line_nested_too_deep_is_one_problem_not_a_recursion_error(depth, where):
    nested = "[" * depth + "]" * depth
    line = json.dumps(DEV_LINE)[:-1] + f', "{where}": {nested}}}'
    problems = _problems(json.dumps({**DEV_LINE, "name": "ok"}).encode() + b"\n" + line.encode())
    assert [(p.key, p.rule) for p in problems] == [("t.jsonl:2", f"nests deeper than {MAX_DEPTH} levels")]


def test_brackets_inside_strings_do_not_count_as_nesting():
    problems = _problems(json.dumps({**DEV_LINE, "name": "[[[[[[[[[[[[{{{{{{{{{"}).encode())
    assert [p.key for p in problems] == ["t.jsonl:1 name"]  # a bad name, not "nests deeper"


@pytest.mark.parametrize("extra", [1, 10, MAX_LINE_BYTES])
def test_a_line_longer_than_the_cap_is_one_problem_and_the_next_lines_are_read(extra):
    padding = "x" * (MAX_LINE_BYTES + extra)
    long_line = json.dumps({**DEV_LINE, "name": "long", "description": padding}).encode()
    data = long_line + b"\n" + json.dumps({**DEV_LINE, "name": "bad_name"}).encode() + b"\n"
    problems = _problems(data)
    assert [(p.key, p.rule) for p in problems] == [
        ("t.jsonl:1", f"is longer than {MAX_LINE_BYTES:,} bytes"),
        ("t.jsonl:2 name", "String should match pattern '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'")]


def test_a_line_at_the_cap_is_read():
    line = json.dumps({**DEV_LINE, "kind": "inference"})
    line = line[:-1] + ', "localQueue": "c12-inference-lq"' + " " * (MAX_LINE_BYTES - len(line) - 34) + "}"
    assert len(line.encode()) == MAX_LINE_BYTES
    assert _read(line.encode()).workloads


def test_more_lines_than_the_cap_stop_the_reader_with_one_problem():
    data = json.dumps(DEV_LINE).encode() + b"\n" * MAX_LINES + b"{}\n"
    problems = _problems(data)
    assert [(p.key, p.rule) for p in problems] == [(f"t.jsonl:{MAX_LINES + 1}",
                                                    f"a trace has at most {MAX_LINES:,} lines")]


@pytest.mark.parametrize("line, rule", [
    ('{"name": "r1", "pods": ' + "9" * 5000 + "}", "not JSON (Exceeds the limit (4300 digits)"),
    ("[1, 2]", "is a JSON list, not an object"),
    ('"r1"', "is a JSON str, not an object"),
    ("3", "is a JSON int, not an object"),
    ("null", "is a JSON NoneType, not an object"),
    ("{", "not JSON (Expecting property name enclosed in double quotes)"),
])
def test_json_that_is_no_workload_object_is_one_problem(line, rule):
    problems = _problems(line.encode())
    assert len(problems) == 1 and problems[0].key == "t.jsonl:1" and problems[0].rule.startswith(rule)


def test_a_thousand_bad_lines_give_a_message_of_fifty_and_a_count():
    with pytest.raises(TraceError) as info:
        _read(b"nope\n" * 1000)
    message = str(info.value)
    assert len(info.value.problems) == 1000
    assert message.splitlines()[0] == "invalid trace t.jsonl: 1000 problems (the first 50 below)"
    assert len(message.splitlines()) == 51


def test_names_used_twice_are_named_at_their_line():
    data = "\n".join(json.dumps({**DEV_LINE, "submitSeconds": i}) for i in range(2)).encode()
    assert [p.key for p in _problems(data)] == ["t.jsonl:1 name"]


@settings(max_examples=40, deadline=None)
@given(st.from_regex(r"[a-z][a-z0-9-]{0,20}[a-z0-9]", fullmatch=True),
       st.sampled_from(["namespace", "localQueue", "priorityClass"]))
def test_a_queue_or_priority_class_the_stack_does_not_have_is_an_error_at_its_line(name, field):
    dev = load_stack(STACKS / "Pulumi.dev.yaml")
    known = {"c12-inference", "c12-inference-lq", "c12-training", "c12-training-lq", "c12-inference-prio",
             "c12-training-prio"}
    if name in known:
        return
    lines = [json.dumps({**DEV_LINE, "name": "ok"}), json.dumps({**DEV_LINE, "name": "bad", field: name})]
    demand = _read("\n".join(lines).encode())
    with pytest.raises(TraceError) as info:
        what_if(demand, dev)
    [problem] = info.value.problems
    key = "priorityClass" if field == "priorityClass" else "localQueue"
    assert problem.key == f"t.jsonl:2 {key}"
    assert problem.fix.startswith("use one of the stack's: ")
    assert ("c12-inference/c12-inference-lq" if key == "localQueue" else "c12-inference-prio") in problem.fix


def test_a_queue_only_the_base_has_is_the_change_not_an_error(tmp_path):
    dev = load_stack(STACKS / "Pulumi.dev.yaml")
    staging = load_stack(STACKS / "Pulumi.staging.yaml")
    demand = _read(json.dumps(DEV_LINE).encode())
    result = what_if(demand, staging, dev)
    assert result.comparison.head.unqueued == ("r1",)


def _whatif(trace_path, *extra):
    return _run(["whatif", "--stack", "dev", "--trace", str(trace_path), *extra])


@pytest.mark.parametrize("make", ["missing", "directory", "unreadable-bytes", "unknown-class", "unknown-queue"])
def test_the_whatif_command_exits_2_with_one_line_per_problem_and_no_traceback(tmp_path, make):
    path = tmp_path / "t.jsonl"
    if make == "directory":
        path.mkdir()
    elif make == "unreadable-bytes":
        path.write_bytes(b"\xff\xfe{\x00}\x00")
    elif make == "unknown-class":
        path.write_text(json.dumps({**DEV_LINE, "priorityClass": "gold"}) + "\n")
    elif make == "unknown-queue":
        path.write_text(json.dumps({**DEV_LINE, "localQueue": "nope"}) + "\n")
    code, out, err = _whatif(path)
    assert code == 2 and out == ""
    assert err.startswith(f"cohorts: invalid trace {path}: 1 problem\n  - {path}")
    assert "Fix: " in err and "Traceback" not in err and "API server" not in err
    expected = {"missing": "cannot be read as a trace file (No such file or directory)",
                "directory": "cannot be read as a trace file (Is a directory)",
                "unreadable-bytes": "has NUL bytes", "unknown-class": ":1 priorityClass = \"gold\"",
                "unknown-queue": ":1 localQueue = \"c12-inference/nope\""}[make]
    assert expected in err


@pytest.mark.parametrize("argv", [["-o", "json"], ["--output", "json"], ["--output=json"]])
def test_whatif_json_is_one_document_through_both_commands(tmp_path, argv):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(DEV_LINE) + "\n")
    code, out, err = _whatif(path, *argv)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["kind"] == "kueue-cohorts/whatif/v1" and doc["trace"]["workloads"] == 1
    assert [q["key"] for q in doc["queues"]][:1] == ["c12-inference-cq"]
    entry = subprocess.run([sys.executable, "-m", "kueue_cohorts", "whatif", "--trace", str(path), *argv],
                           capture_output=True, text=True, cwd=ROOT, check=False)
    module = subprocess.run([sys.executable, "-m", "kueue_cohorts.cohorts", "whatif", "--trace", str(path), *argv],
                            capture_output=True, text=True, cwd=ROOT, check=False)
    assert (entry.returncode, module.returncode) == (0, 0), (entry.stderr, module.stderr)
    assert json.loads(entry.stdout) == json.loads(module.stdout) == doc


def test_whatif_html_is_one_page_with_the_section_and_the_chart(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(DEV_LINE) + "\n")
    code, out, err = _whatif(path, "--output", "html")
    assert code == 0, err
    assert out.startswith("<!DOCTYPE html>") and "<pre>### What-if: " in out and 'id="whatif-chart"' in out
