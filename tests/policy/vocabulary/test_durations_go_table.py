"""policy/rules/vocabulary/durations.py against Go itself: inputs Go's own test table leaves out (control, DEL,
non-ASCII and quote bytes in the message, the overflow edges of leadingInt and leadingFraction, every unit boundary
of Duration.String), the truncation of positive_duration_problem's clause, and seconds_field.

The expected values were printed by `time.ParseDuration` and `Duration.String` of go1.26.8 (the Go the toolchain
pins, src/time/format.go), run on this machine over exactly these inputs, and pasted here: none is recomputed with
the module under test. Mutants killed (benchmarks.mutation, target vocabulary-durations): `_escape`'s byte ranges
and escapes (1-18), the digit range of `_leading_int`, `_leading_fraction` and the unit scan (`<= 58` for `<= 0x39`,
`47` for the dot), the fraction's scale and `f > 0`, every boundary of `format_go_duration`, `_fraction`'s
`rstrip("0")`, the 80 and 200 character truncation of `positive_duration_problem` and every line of `seconds_field`.
"""
from __future__ import annotations

import math

import pytest

from kueue_cohorts.policy.rules.vocabulary.durations import (
    format_go_duration,
    parse_go_duration,
    positive_duration_problem,
    seconds_field,
)

GO_VALUES = [  # (text, time.ParseDuration(text) in ns, Duration.String() of it), go1.26.8
    ('1.5s', 1500000000, '1.5s'),
    ('0.9s', 900000000, '900ms'),
    ('1.0000000000000000000001s', 1000000000, '1s'),
    ('1.9223372036854775807s', 1922337203, '1.922337203s'),
    ('0.9223372036854775808s', 922337203, '922.337203ms'),
    ('0.92233720368547758071s', 922337203, '922.337203ms'),
    ('.9223372036854775807h', 3320413933267, '55m20.413933267s'),
    ('9223372036854775807ns', 9223372036854775807, '2562047h47m16.854775807s'),
    ('922337203685477580ns', 922337203685477580, '256204h46m43.68547758s'),
    ('9223372036854775807.5ns', 9223372036854775807, '2562047h47m16.854775807s'),
    ('1.5ns', 1, '1ns'),
    ('0.5ns', 0, '0s'),
    ('1.1ns', 1, '1ns'),
    ('3.0000000001h', 10800000000360, '3h0m0.00000036s'),
    ('-9223372036854775808ns', -9223372036854775808, '-2562047h47m16.854775808s'),
    ('9.223372036854775807s', 9223372036, '9.223372036s'),
    ('2562047h47m16.854775807s', 9223372036854775807, '2562047h47m16.854775807s'),
    ('0.000000001s', 1, '1ns'),
    ('00001s', 1000000000, '1s'),
    ('0', 0, '0s'),
    ('-0', 0, '0s'),
    ('+0', 0, '0s'),
    ('+5s', 5000000000, '5s'),
    ('1µs', 1000, '1µs'),
    ('1μs', 1000, '1µs'),
    ('1us', 1000, '1µs'),
    ('999ns', 999, '999ns'),
    ('1000ns', 1000, '1µs'),
    ('999999ns', 999999, '999.999µs'),
    ('1000000ns', 1000000, '1ms'),
    ('999999999ns', 999999999, '999.999999ms'),
    ('1000000000ns', 1000000000, '1s'),
    ('1000000001ns', 1000000001, '1.000000001s'),
    ('59999999999ns', 59999999999, '59.999999999s'),
    ('60000000000ns', 60000000000, '1m0s'),
    ('3599999999999ns', 3599999999999, '59m59.999999999s'),
    ('3600000000000ns', 3600000000000, '1h0m0s'),
    ('-1ns', -1, '-1ns'),
    ('-1000ns', -1000, '-1µs'),
    ('-999999999ns', -999999999, '-999.999999ms'),
    ('-1000000000ns', -1000000000, '-1s'),
    ('1.000001ms', 1000001, '1.000001ms'),
    ('1.1µs', 1100, '1.1µs'),
    ('1.01s', 1010000000, '1.01s'),
    ('5.s', 5000000000, '5s'),
    ('.5m', 30000000000, '30s'),
    ('1h.5m', 3630000000000, '1h0m30s'),
    ('2h.25h', 8100000000000, '2h15m0s'),
    ('1.1h', 3960000000000, '1h6m0s'),
    ('1.1ms', 1100000, '1.1ms'),
    ('1.01m', 60600000000, '1m0.6s'),
]

GO_ERRORS = [  # (text, time.ParseDuration(text)'s error), go1.26.8
    ('1.5:s', 'time: unknown unit ":s" in duration "1.5:s"'),
    ('1X', 'time: unknown unit "X" in duration "1X"'),
    ('.9:s', 'time: unknown unit ":s" in duration ".9:s"'),
    ('1s:5s', 'time: unknown unit "s:" in duration "1s:5s"'),
    ('\x1f1s', 'time: invalid duration "\\x1f1s"'),
    ('\x7f1s', 'time: invalid duration "\x7f1s"'),
    ('\x80s', 'time: invalid duration "\\xc2\\x80s"'),
    ('1\x1fs', 'time: unknown unit "\\x1fs" in duration "1\\x1fs"'),
    ('1 s', 'time: unknown unit " s" in duration "1 s"'),
    ('1 s', 'time: unknown unit " s" in duration "1 s"'),
    ('1"s', 'time: unknown unit "\\"s" in duration "1\\"s"'),
    ('1\\s', 'time: unknown unit "\\\\s" in duration "1\\\\s"'),
    ('1/s', 'time: unknown unit "/s" in duration "1/s"'),
    ('1:s', 'time: unknown unit ":s" in duration "1:s"'),
    ('1\x00s', 'time: unknown unit "\\x00s" in duration "1\\x00s"'),
    ('1ÿs', 'time: unknown unit "\\xc3\\xbfs" in duration "1\\xc3\\xbfs"'),
    ('9s0', 'time: missing unit in duration "9s0"'),
    ('9223372036854775808ns', 'time: invalid duration "9223372036854775808ns"'),
    ('2562047h47m16.854775808s', 'time: invalid duration "2562047h47m16.854775808s"'),
    ('2562048h', 'time: invalid duration "2562048h"'),
    ('1:0s', 'time: unknown unit ":" in duration "1:0s"'),
    ('1.2.3s', 'time: missing unit in duration "1.2.3s"'),
    ('1e3s', 'time: unknown unit "e" in duration "1e3s"'),
    ('1_0s', 'time: unknown unit "_" in duration "1_0s"'),
]


@pytest.mark.parametrize("text,nanoseconds,shown", GO_VALUES)
def test_parse_and_format_as_go_does(text: str, nanoseconds: int, shown: str) -> None:
    assert parse_go_duration(text) == nanoseconds
    assert format_go_duration(nanoseconds) == shown


@pytest.mark.parametrize("text,message", GO_ERRORS)
def test_errors_word_for_word_as_go(text: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_go_duration(text)
    assert str(raised.value) == message


def test_bytes_are_read_as_go_reads_a_string() -> None:
    """A str is its UTF-8 bytes, and a lone surrogate (not UTF-8) its surrogateescape byte, as Go keeps any byte."""
    assert parse_go_duration(b"1.5s") == 1_500_000_000
    with pytest.raises(ValueError) as raised:
        parse_go_duration("1\udcffs")
    assert str(raised.value) == 'time: unknown unit "\\xffs" in duration "1\\xffs"'


def test_a_non_string_is_a_type_error_naming_its_type() -> None:
    with pytest.raises(TypeError) as raised:
        parse_go_duration(10)  # type: ignore[arg-type]
    assert str(raised.value) == "a Go duration is a string, not int"


WRITE = ('; write a positive duration with units ns, us, ms, s, m or h (e.g. "10m", "1h30m", ".5m"), at most '
         '2562047h47m16.854775807s')


@pytest.mark.parametrize("text,clause", [
    ("9" * 80, "'" + "9" * 80 + "' is not a Go duration (time: invalid duration \"" + "9" * 80 + "\")" + WRITE),
    ("9" * 81, "'" + "9" * 77 + "'... is not a Go duration (time: invalid duration \"" + "9" * 81 + "\")" + WRITE),
    # Go's message is 25 characters around the text: 175 characters make it 200, shown whole; 176 make it 201, cut
    # to its first 197 and "...".
    ("9" * 175, "'" + "9" * 77 + "'... is not a Go duration (time: invalid duration \"" + "9" * 175 + "\")" + WRITE),
    ("9" * 176, "'" + "9" * 77 + "'... is not a Go duration (time: invalid duration \"" + "9" * 173 + "...)" + WRITE),
    ("x" * 80 + "s", "'" + "x" * 77 + "'... is not a Go duration (time: invalid duration \"" + "x" * 80 + "s\")"
     + WRITE),
])
def test_long_values_are_cut_at_80_and_go_messages_at_200(text: str, clause: str) -> None:
    assert positive_duration_problem(text) == clause


@pytest.mark.parametrize("raw,seconds", [
    (0, 0.0), ("0", 0.0), (30, 30.0), ("30", 30.0), (" 30 ", 30.0), (2.5, 2.5), ("1e3", 1000.0),
    (-1, None), ("-0.5", None), (True, None), (False, None), (None, None), ("30s", None), ("", None),
    ([30], None), ({"seconds": 30}, None), (math.nan, None), ("nan", None), (math.inf, None), ("inf", None),
    (-math.inf, None),
])
def test_seconds_field_takes_only_finite_non_negative_numbers(raw: object, seconds: float | None) -> None:
    """terminationGracePeriodSeconds and the like: an int64 of seconds in the API (core/v1 types.go); anything else
    (a value unknown at preview, a unit, NaN, infinity, a bool) is None, for the caller to fail closed on."""
    assert seconds_field(raw) == seconds
