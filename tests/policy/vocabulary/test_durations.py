"""policy/rules/vocabulary/durations.py: Go's own ParseDuration test table, Kueue's range, and round trips."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.vocabulary.durations import (
    MAX_DURATION,
    MIN_DURATION,
    format_go_duration,
    parse_go_duration,
    positive_duration_problem,
)

NS, US, MS, S, M, H = 1, 1_000, 1_000_000, 1_000_000_000, 60_000_000_000, 3_600_000_000_000

# Test data copied from golang/go src/time/time_test.go (parseDurationTests, parseDurationErrorTests).
GO_PARSE_DURATION_TESTS = [
    ("0", 0), ("5s", 5 * S), ("30s", 30 * S), ("1478s", 1478 * S),
    ("-5s", -5 * S), ("+5s", 5 * S), ("-0", 0), ("+0", 0),
    ("5.0s", 5 * S), ("5.6s", 5 * S + 600 * MS), ("5.s", 5 * S), (".5s", 500 * MS), ("1.0s", S), ("1.00s", S),
    ("1.004s", S + 4 * MS), ("1.0040s", S + 4 * MS), ("100.00100s", 100 * S + MS),
    ("10ns", 10 * NS), ("11us", 11 * US), ("12µs", 12 * US), ("12μs", 12 * US), ("13ms", 13 * MS),
    ("14s", 14 * S), ("15m", 15 * M), ("16h", 16 * H),
    ("3h30m", 3 * H + 30 * M), ("10.5s4m", 4 * M + 10 * S + 500 * MS), ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
    ("1h2m3s4ms5us6ns", H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS),
    ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
    ("52763797000ns", 52763797000 * NS),
    ("0.3333333333333333333h", 20 * M),
    ("9007199254740993ns", (1 << 53) + 1),
    ("9223372036854775807ns", (1 << 63) - 1), ("9223372036854775.807us", (1 << 63) - 1),
    ("9223372036s854ms775us807ns", (1 << 63) - 1),
    ("-9223372036854775808ns", -1 << 63), ("-9223372036854775.808us", -1 << 63),
    ("-9223372036s854ms775us808ns", -1 << 63),
    ("-2562047h47m16.854775808s", -1 << 63),
    ("0.100000000000000000000h", 6 * M),
    ("0.830103483285477580700h", 49 * M + 48 * S + 372539827 * NS),
]

GO_PARSE_DURATION_ERROR_TESTS = [
    (b"", '""'), (b"3", '"3"'), (b"-", '"-"'), (b"s", '"s"'), (b".", '"."'), (b"-.", '"-."'), (b".s", '".s"'),
    (b"+.s", '"+.s"'), (b"1d", '"1d"'), (b"\x85\x85", r'"\x85\x85"'), (b"\xffff", r'"\xffff"'),
    (b"hello \xffff world", r'"hello \xffff world"'), ("\ufffd".encode(), r'"\xef\xbf\xbd"'),
    ("\ufffd hello \ufffd world".encode(), r'"\xef\xbf\xbd hello \xef\xbf\xbd world"'),
    (b"9223372036854775810ns", '"9223372036854775810ns"'), (b"9223372036854775808ns", '"9223372036854775808ns"'),
    (b"-9223372036854775809ns", '"-9223372036854775809ns"'), (b"9223372036854776us", '"9223372036854776us"'),
    (b"3000000h", '"3000000h"'), (b"9223372036854775.808us", '"9223372036854775.808us"'),
    (b"9223372036854ms775us808ns", '"9223372036854ms775us808ns"'),
]


@pytest.mark.parametrize("text,want", GO_PARSE_DURATION_TESTS)
def test_go_parse_duration_table(text, want):
    assert parse_go_duration(text) == want


@pytest.mark.parametrize("raw,expect", GO_PARSE_DURATION_ERROR_TESTS)
def test_go_parse_duration_error_table(raw, expect):
    with pytest.raises(ValueError) as err:
        parse_go_duration(raw)
    assert expect in str(err.value)


@pytest.mark.parametrize("text,message", [
    ("", 'time: invalid duration ""'),
    ("3", 'time: missing unit in duration "3"'),
    ("1d", 'time: unknown unit "d" in duration "1d"'),
    ("9999999h", 'time: invalid duration "9999999h"'),
    ("2562047h47m16.854775808s", 'time: invalid duration "2562047h47m16.854775808s"'),
    ('1"x', 'time: unknown unit "\\"x" in duration "1\\"x"'),
    ("10 m", 'time: unknown unit " m" in duration "10 m"'),
    ("1e3s", 'time: unknown unit "e" in duration "1e3s"'),
])
def test_go_error_messages_exactly(text, message):
    with pytest.raises(ValueError) as err:
        parse_go_duration(text)
    assert str(err.value) == message


def test_issue_13_item_7_inputs():
    # ".5m" is valid Go; "9999999h" is above Go's range; "0s" parses but is not positive.
    assert parse_go_duration(".5m") == 30 * S
    assert positive_duration_problem(".5m") is None
    assert positive_duration_problem("9999999h") == (
        "'9999999h' is not a Go duration (time: invalid duration \"9999999h\"); write a positive duration with units "
        "ns, us, ms, s, m or h (e.g. \"10m\", \"1h30m\", \".5m\"), at most 2562047h47m16.854775807s")
    assert positive_duration_problem("0s") == "'0s' is not positive; write a duration above zero (e.g. \"10m\")"


def test_range_edges():
    assert parse_go_duration("2562047h47m16.854775807s") == MAX_DURATION
    assert positive_duration_problem("2562047h47m16.854775807s") is None
    assert parse_go_duration("-2562047h47m16.854775808s") == MIN_DURATION
    assert positive_duration_problem("1ns") is None


@pytest.mark.parametrize("value", ["-1s", "0", "-0", "+0", "0h", "0.0000000001s"])
def test_zero_and_negative_are_not_positive(value):
    assert "is not positive" in positive_duration_problem(value)


@pytest.mark.parametrize("value", [None, 10, 1.5, True, ["10m"], {"timeout": "10m"}])
def test_non_strings_are_a_problem_not_an_exception(value):
    assert "is not a Go duration string" in positive_duration_problem(value)
    with pytest.raises(TypeError):
        parse_go_duration(value)


def test_huge_input_is_reported_quickly_and_truncated():
    problem = positive_duration_problem("9" * 100_000 + "h")
    assert len(problem) < 600
    assert "is not a Go duration" in problem
    assert parse_go_duration("0." + "1" * 100_000 + "s") == 111111111


@given(st.integers(min_value=MIN_DURATION, max_value=MAX_DURATION))
def test_format_then_parse_round_trips(ns):
    assert parse_go_duration(format_go_duration(ns)) == ns


@given(st.integers(min_value=0, max_value=2562047 * 3600), st.integers(min_value=0, max_value=999_999_999))
def test_seconds_written_with_fraction_parse_exactly(seconds, nanos):
    text = f"{seconds}.{nanos:09d}s"
    assert parse_go_duration(text) == seconds * S + nanos
    assert parse_go_duration("-" + text) == -(seconds * S + nanos)


@given(st.integers(min_value=0, max_value=2562046), st.integers(min_value=0, max_value=59),
       st.integers(min_value=0, max_value=59))
def test_composite_units_add_up(h, m, s):
    assert parse_go_duration(f"{h}h{m}m{s}s") == h * H + m * M + s * S


@given(st.integers(min_value=MAX_DURATION // S + 1, max_value=10 ** 30))
def test_seconds_beyond_range_are_refused(seconds):
    with pytest.raises(ValueError, match="invalid duration"):
        parse_go_duration(f"{seconds}s")
    assert positive_duration_problem(f"{seconds}s") is not None


@given(st.text(max_size=30))
def test_any_text_parses_or_raises_value_error(text):
    try:
        value = parse_go_duration(text)
    except ValueError as err:
        assert str(err).startswith("time: ")
        assert positive_duration_problem(text) is not None
    else:
        assert MIN_DURATION <= value <= MAX_DURATION
        assert (positive_duration_problem(text) is None) == (value > 0)
