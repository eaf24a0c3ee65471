"""Go durations exactly as Kueue reads them: a port of Go's `time.ParseDuration`.

Kueue's manager Configuration (`waitForPodsReady.timeout`, `...recoveryTimeout`, ...) holds `metav1.Duration`
values, which the manager decodes with Go's `time.ParseDuration`. This module ports that function byte for byte
(upstream: golang/go `src/time/format.go`, `ParseDuration`, `leadingInt`, `leadingFraction`, `quote`), so the pack
and the settings check accept exactly what Kueue accepts:

- a possibly signed sequence of decimal numbers, each with an optional fraction and a unit: "300ms", "-1.5h",
  "2h45m", ".5m", "5.s"; the bare "0" (with or without sign) needs no unit;
- units "ns", "us", "µs" (U+00B5), "μs" (U+03BC), "ms", "s", "m", "h" (no "d");
- the result is an int64 count of nanoseconds: from -9223372036854775808 ("-2562047h47m16.854775808s") to
  9223372036854775807 ("2562047h47m16.854775807s"); anything beyond is an error, as are "", "3" (missing unit),
  "." and ".s" (no digits) and "1d" (unknown unit).

Fractions use float64 exactly like Go ("0.3333333333333333333h" is 20m), so the results are bit-identical.
"""
from __future__ import annotations

import re
from typing import Any, Optional, Union

__all__ = ["MAX_DURATION", "MIN_DURATION", "format_go_duration", "parse_go_duration", "positive_duration_problem"]

MAX_DURATION = (1 << 63) - 1
"""The largest Go `time.Duration` in nanoseconds ("2562047h47m16.854775807s")."""
MIN_DURATION = -(1 << 63)
"""The smallest Go `time.Duration` in nanoseconds ("-2562047h47m16.854775808s")."""

_UNITS = {
    b"ns": 1,
    b"us": 1_000,
    "µs".encode(): 1_000,  # U+00B5 micro sign
    "μs".encode(): 1_000,  # U+03BC Greek small letter mu
    b"ms": 1_000_000,
    b"s": 1_000_000_000,
    b"m": 60 * 1_000_000_000,
    b"h": 3600 * 1_000_000_000,
}
_LIMIT = 1 << 63
_DIGIT_RUN = re.compile(rb"[0-9]*")
_HEX = "0123456789abcdef"
_RUNE_ERROR = "\ufffd".encode()


def _escape(byte: int) -> str:
    if byte >= 0x80 or byte < 0x20:
        return f"\\x{_HEX[byte >> 4]}{_HEX[byte & 0xF]}"
    return "\\" + chr(byte) if chr(byte) in '"\\' else chr(byte)


def _quote(raw: bytes) -> str:
    """Go's `time.quote`: the text in double quotes, every non-ASCII or control byte as \\xNN, `"` and `\\` escaped."""
    return '"' + "".join(map(_escape, raw)) + '"'


def _leading_int(s: bytes) -> tuple[int, bytes, bool]:
    """Go's `leadingInt`: consume [0-9]*; returns (value, rest, overflowed)."""
    x = i = 0
    while i < len(s) and 0x30 <= s[i] <= 0x39:
        if x > _LIMIT // 10:
            return 0, s, True
        x = x * 10 + s[i] - 0x30
        if x > _LIMIT:
            return 0, s, True
        i += 1
    return x, s[i:], False


def _leading_fraction(s: bytes) -> tuple[int, float, bytes]:
    """Go's `leadingFraction`: consume [0-9]*, stop accumulating precision (not digits) on overflow."""
    x, scale, i, overflow = 0, 1.0, 0, False
    while i < len(s) and 0x30 <= s[i] <= 0x39:
        if x > (_LIMIT - 1) // 10:
            overflow = True
        else:
            y = x * 10 + s[i] - 0x30
            if y > _LIMIT:
                overflow = True
            else:
                x, scale = y, scale * 10
        if overflow:  # the remaining digits only get consumed
            run = _DIGIT_RUN.match(s, i)
            assert run is not None  # s[i] is a digit: the run has at least it
            i = run.end()
            break
        i += 1
    return x, scale, s[i:]


def parse_go_duration(text: Union[str, bytes]) -> int:
    """Parse a Go duration string exactly like Go's `time.ParseDuration`.

    Args:
        text: the duration ("10m", "1h30m", ".5m", "-2m3.4s"); a str is read as its UTF-8 bytes (as Go reads a
            string), bytes as they are.
    Returns:
        The duration in nanoseconds (an int within MIN_DURATION..MAX_DURATION).
    Raises:
        ValueError: with Go's message, e.g. 'time: invalid duration "9999999h"', 'time: missing unit in duration
            "3"', 'time: unknown unit "d" in duration "1d"'. A non-string raises TypeError.
    """
    if isinstance(text, str):
        orig = text.encode("utf-8", "surrogateescape")
    elif isinstance(text, (bytes, bytearray)):
        orig = bytes(text)
    else:
        raise TypeError(f"a Go duration is a string, not {type(text).__name__}")
    invalid = ValueError("time: invalid duration " + _quote(orig))
    s, d, neg = orig, 0, False
    if s and s[:1] in (b"-", b"+"):
        neg = s[:1] == b"-"
        s = s[1:]
    if s == b"0":
        return 0
    if not s:
        raise invalid
    while s:
        f, scale = 0, 1.0
        if not (s[0] == 0x2E or 0x30 <= s[0] <= 0x39):
            raise invalid
        before = len(s)
        v, s, overflow = _leading_int(s)
        if overflow:
            raise invalid
        pre = before != len(s)
        post = False
        if s and s[0] == 0x2E:
            s = s[1:]
            before = len(s)
            f, scale, s = _leading_fraction(s)
            post = before != len(s)
        if not pre and not post:
            raise invalid
        i = 0
        while i < len(s) and not (s[i] == 0x2E or 0x30 <= s[i] <= 0x39):
            i += 1
        if i == 0:
            raise ValueError("time: missing unit in duration " + _quote(orig))
        unit_text, s = s[:i], s[i:]
        unit = _UNITS.get(unit_text)
        if unit is None:
            raise ValueError(f"time: unknown unit {_quote(unit_text)} in duration {_quote(orig)}")
        if v > _LIMIT // unit:
            raise invalid
        v *= unit
        if f > 0:
            # Go: v += uint64(float64(f) * (float64(unit) / scale)); the float64 product is at most 3.6e12.
            v += int(float(f) * (float(unit) / scale))
            if v > _LIMIT:
                raise invalid
        d += v
        if d > _LIMIT:
            raise invalid
    if neg:
        return -d
    if d > MAX_DURATION:
        raise invalid
    return d


def format_go_duration(nanoseconds: int) -> str:
    """Go's `Duration.String`: "1h2m3.5s", "1.5ms", "0s"; the inverse of `parse_go_duration`.

    Args:
        nanoseconds: an int within MIN_DURATION..MAX_DURATION.
    Returns:
        The canonical Go text (parse_go_duration(format_go_duration(n)) == n for every such n).
    """
    if nanoseconds == 0:
        return "0s"
    sign = "-" if nanoseconds < 0 else ""
    u = abs(nanoseconds)
    if u < 1_000_000_000:
        for unit, size in (("ns", 1), ("µs", 1_000), ("ms", 1_000_000)):
            if u < size * 1000:
                return sign + _fraction(u, size) + unit
    hours, rest = divmod(u, 3600 * 1_000_000_000)
    minutes, rest = divmod(rest, 60 * 1_000_000_000)
    text = _fraction(rest, 1_000_000_000) + "s"
    if hours or minutes:
        text = f"{minutes}m" + text
    if hours:
        text = f"{hours}h" + text
    return sign + text


def _fraction(value: int, size: int) -> str:
    whole, frac = divmod(value, size)
    if not frac:
        return str(whole)
    digits = len(str(size)) - 1
    return f"{whole}." + str(frac).rjust(digits, "0").rstrip("0")


def positive_duration_problem(text: object) -> Optional[str]:
    """Why `text` is not a positive Go duration within Go's range, or None when it is one.

    Args:
        text: a configuration value (normally a str such as "10m").
    Returns:
        None for a duration Kueue accepts that is above zero; else a clause for a message, e.g.
        "'9999999h' is not a Go duration (time: invalid duration \"9999999h\"; the largest is
        2562047h47m16.854775807s)", "'0s' is not positive". Never raises for any input.
    """
    if not isinstance(text, str):
        return f"{text!r:.80} is not a Go duration string (write it quoted, e.g. \"10m\")"
    shown = repr(text) if len(text) <= 80 else repr(text[:77]) + "..."
    try:
        value = parse_go_duration(text)
    except ValueError as err:
        detail = str(err) if len(str(err)) <= 200 else str(err)[:197] + "..."
        return (f"{shown} is not a Go duration ({detail}); write a positive duration with units ns, us, ms, s, m or "
                f"h (e.g. \"10m\", \"1h30m\", \".5m\"), at most 2562047h47m16.854775807s")
    if value <= 0:
        return f"{shown} is not positive; write a duration above zero (e.g. \"10m\")"
    return None


def seconds_field(raw: Any) -> Optional[float]:
    """A seconds field of a resource input (terminationGracePeriodSeconds, a preStop sleep's seconds, a budget) as a
    number: None for a bool, a non-number, a negative value, NaN or infinity (a value unknown at preview or malformed;
    the caller fails closed or reports it). Returns seconds as a float."""
    if isinstance(raw, bool):
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return value if value >= 0 and value == value and value != float("inf") else None
