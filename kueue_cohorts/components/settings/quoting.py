"""How a stack value is written into another language: one helper per language, used wherever a value of the stack
file (a name, `monitoring.kueueJob`, a context, a key) is pasted into text that another program parses.

- PromQL (`promql_string`, `promql_regex_alternatives`): a double-quoted string literal. "PromQL follows the same
  escaping rules as Go" (Prometheus docs, Querying basics, "String literals"; promql/parser/lex.go `lexString`, which
  accepts exactly Go's escapes): `"` and `\\` escaped, control characters as `\\xHH`, everything else as is (UTF-8).
  A regex matcher's alternatives are RE2-quoted first (regexp.QuoteMeta's set), then string-quoted.
- Go templates (`go_template_text`): Prometheus expands alert annotations and labels as Go text/template with the
  default delimiters (rules/alerting.go, template/template.go `Expander`): every `{` of the value becomes the action
  `{{"{"}}`, which prints it, so no `{{` of the value (nor one it would form with the text around it) opens an
  action.
- Markdown (`markdown_fence`): a fenced code block whose backtick fence is longer than any run of backticks in the
  text, so no line of the text closes it (CommonMark 0.31.2, 4.5 "Fenced code blocks": the closing fence must be at
  least as long as the opening one).
- HTML (`html_text`): `html.escape` (the standard library) of the text, quotes included.
- Shell (`shell_word`): `shlex.quote` (the standard library): one word of a POSIX shell command line, whatever it
  holds.
"""
from __future__ import annotations

import html
import re
import shlex

__all__ = ["promql_string", "promql_regex_alternatives", "go_template_text", "markdown_fence", "html_text",
           "shell_word"]

_GO_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_RE2_META = re.compile(r"([\\.+*?()|\[\]{}^$])")
"""regexp.QuoteMeta's special characters (Go regexp/regexp.go `specialBytes`)."""


def promql_string(value: str) -> str:
    """`value` as a PromQL double-quoted string literal (with the quotes): `"`, `\\` and control characters escaped
    as Go escapes them, every other character as is. Takes any str without lone surrogates (not UTF-8: PyYAML and
    pydantic never give one for a stack value); returns the literal. Raises ValueError on a lone surrogate."""
    out = ['"']
    for char in value:
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02x}")
        elif 0xD800 <= ord(char) <= 0xDFFF:
            raise ValueError(f"{value!r} holds a lone surrogate, which no UTF-8 text can")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def promql_regex_alternatives(values: list[str]) -> str:
    """A PromQL regex matcher's string (with the quotes) that matches exactly the strings `values` (RE2, fully
    anchored by PromQL): each value RE2-quoted, joined with `|`, then `promql_string`. Raises ValueError as
    promql_string."""
    return promql_string("|".join(_RE2_META.sub(r"\\\1", v) for v in values))


def go_template_text(value: str) -> str:
    """`value` as text of a Go text/template (default delimiters) that the template prints exactly: each `{` becomes
    the action `{{"{"}}`; nothing else changes. Safe to concatenate with any other template text."""
    return value.replace("{", '{{"{"}}')


def markdown_fence(text: str, info: str = "") -> str:
    """`text` as a Markdown fenced code block (CommonMark 0.31.2, 4.5): a backtick fence one longer than the longest
    run of backticks in `text` (at least three), the info string `info` (a word without backticks, e.g. `text`),
    then the text and the closing fence, each on its own line. Returns the block ending in a newline. Raises
    ValueError when `info` holds a backtick or a line break (the fence could not hold it)."""
    if "`" in info or "\n" in info or "\r" in info:
        raise ValueError(f"info string {info!r}: a backtick or line break cannot be in it")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{fence}{info}\n{body}{fence}\n"


def html_text(value: str) -> str:
    """`value` as HTML text or attribute value: `html.escape(value, quote=True)` (`&`, `<`, `>`, `"`, `'`)."""
    return html.escape(value, quote=True)


def shell_word(value: str) -> str:
    """`value` as one word of a POSIX shell command line: `shlex.quote(value)`."""
    return shlex.quote(value)
