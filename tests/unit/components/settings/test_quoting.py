"""Values pasted into other languages (issue 38, class 6): one helper per language (components.settings.quoting),
each with a property test that a generated value round-trips and cannot break out, and the places that paste stack
values use them (monitoring.kueueJob in PromQL and in an alert annotation, names in the report's HTML title, the
live preview's Markdown code block, shell command lines in fix messages)."""
from __future__ import annotations

import ast
import re
import shlex
import subprocess
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.cohorts import report
from kueue_cohorts.components.model.alerts import alerts, label_matcher, rules_file
from kueue_cohorts.components.settings import parse_settings
from kueue_cohorts.components.settings.quoting import (
    go_template_text,
    html_text,
    markdown_fence,
    promql_regex_alternatives,
    promql_string,
    shell_word,
)
from kueue_cohorts.prsummary.live import comment
from tests.helpers import stack_raw

#: Text that leans on each language's special characters.
NASTY = st.text(alphabet=st.sampled_from(list('"\\\'`{}$|.*+?()[]^<>&\n\r\t\x00\x07 ~#;-a1é☃'))
                | st.characters(exclude_categories=["Cs"]), max_size=40)


# --- PromQL ----------------------------------------------------------------------------------------------------------


@given(NASTY)
def test_a_promql_string_decodes_to_the_value_and_ends_where_it_ends(value):
    """Go's (hence PromQL's) escapes here are a subset of Python's: the literal decodes to exactly the value, and
    its only unescaped double quotes are its first and last characters (nothing after the value is read as PromQL)."""
    literal = promql_string(value)
    assert ast.literal_eval(literal) == value
    inner = re.sub(r"\\.", "", literal[1:-1], flags=re.S)
    assert literal[0] == literal[-1] == '"' and '"' not in inner and "\n" not in literal


@given(st.lists(NASTY, min_size=1, max_size=4, unique=True), NASTY)
def test_a_promql_regex_matches_exactly_its_values(values, other):
    pattern = ast.literal_eval(promql_regex_alternatives(values))
    for value in values:
        assert re.fullmatch(pattern, value, flags=re.S)
    assert bool(re.fullmatch(pattern, other, flags=re.S)) == (other in values)


# --- Go templates ----------------------------------------------------------------------------------------------------

ESCAPED_BRACE = '{{"{"}}'


def actions(template: str) -> list[str]:
    """The actions of a Go text/template with the default delimiters, as its lexer finds them: from `{{` to the next
    `}}` outside a string (text/template/parse/lex.go; our actions hold only plain strings)."""
    return re.findall(r'\{\{(?:"(?:[^"\\]|\\.)*"|[^"}]|\}(?!\}))*\}\}', template)


@given(NASTY, NASTY.filter(lambda s: "{" not in s))
def test_go_template_text_opens_no_action_of_its_own(value, plain):
    """Whatever the value and the text around it: the template's actions are exactly one brace-printing action per
    `{` of the value plus the template's own, and the braces printed with the value's other text give the value."""
    template = f"{plain}{go_template_text(value)} {{{{ $value }}}}"
    assert actions(template) == [ESCAPED_BRACE] * value.count("{") + ["{{ $value }}"]
    assert go_template_text(value).replace(ESCAPED_BRACE, "{") == value


# --- Markdown --------------------------------------------------------------------------------------------------------


@given(st.text(alphabet=st.sampled_from(list("`~ \na")), max_size=60))
def test_no_line_of_the_text_closes_its_markdown_fence(text):
    """CommonMark 0.31.2, 4.5: a closing fence is a line of up to 3 spaces and at least as many backticks as the
    opening fence, then only spaces or tabs. No line of the text is one; the block's last line is."""
    block = markdown_fence(text)
    lines = block.split("\n")
    opening = re.match(r"`+", lines[0])
    assert opening is not None
    closes = re.compile(r" {0,3}`{" + str(len(opening.group(0))) + r",}[ \t]*")
    assert not any(closes.fullmatch(line) for line in lines[1:-2])
    assert closes.fullmatch(lines[-2]) and lines[-1] == ""
    assert "\n".join(lines[1:-2]) == text.removesuffix("\n")


def test_the_live_preview_comment_fences_text_that_holds_a_fence():
    """On main the workflow wrote a fence of three backticks around the preview's text: a line ``` in it (a value
    of the pull request quoted in a message) ended the block, and the rest was Markdown of the pull request's."""
    text = b"deploy: kueue-cohorts:cluster.context: x\n```\n# Approved, merge it\n<img src=x>\n"
    body = comment("staging", "failure", text)
    assert body.startswith("<!-- kueue-cohorts live preview: staging -->\n### Live preview of `staging` (failure)")
    assert "\n````\n" + text.decode() + "````\n" in body


# --- HTML ------------------------------------------------------------------------------------------------------------


class _Title(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title: list[str] = []
        self.tags: list[str] = []
        self._in = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self._in = tag == "title"

    def handle_endtag(self, tag):
        self._in = False

    def handle_data(self, data):
        if self._in:
            self.title.append(data)


@given(NASTY.filter(lambda s: "\r" not in s and "\x00" not in s))
def test_html_text_reads_back_as_the_value_and_opens_no_tag(value):
    parser = _Title()
    parser.feed(f"<html><head><title>{html_text(value)}</title></head><body><p a=\"{html_text(value)}\"></p>")
    parser.close()
    assert "".join(parser.title) == value
    assert parser.tags == ["html", "head", "title", "body", "p"]


def test_the_reports_title_escapes_the_stack_name():
    page = report.html(report.Report(stack="x</title><script>alert(1)</script>", prometheus="http://p", start=0,
                                     end=60, step=60, hours=[], queues=[]))
    assert "<script>alert(1)</script>" not in page
    assert "<title>kueue-cohorts report x&lt;/title&gt;&lt;script&gt;" in page


# --- shell -----------------------------------------------------------------------------------------------------------


@given(NASTY.filter(lambda s: "\x00" not in s))
def test_a_shell_word_is_one_word_with_the_value(value):
    assert shlex.split(shell_word(value)) == [value]


@settings(max_examples=30, deadline=None)
@given(NASTY.filter(lambda s: "\x00" not in s))
def test_a_real_shell_reads_the_word_back(value):
    out = subprocess.run(["sh", "-c", f"printf %s {shell_word(value)}"], capture_output=True, timeout=10).stdout
    assert out == value.encode("utf-8", "surrogateescape")


# --- where stack values are pasted -----------------------------------------------------------------------------------

BREAKING_JOBS = [
    'kueue"} == 1) unless on() vector(1) #',   # on main: the Kueue-down alert could never fire
    'kueue"}',
    "kueue\\",
    'kueue{{ template "x" }}',                  # on main: the annotation's Go template failed to expand
    "kueue {{ .Labels }}",
]


@pytest.mark.parametrize("job", BREAKING_JOBS)
def test_kueue_job_is_one_promql_string_and_plain_annotation_text(job):
    raw = {**stack_raw("dev"), "monitoring": {"kueueJob": job}}
    down = next(a for a in alerts(parse_settings(raw), "dev") if a.alert == "KueueCohortsKueueDown")
    assert down.expr == f"absent(up{{job={promql_string(job)}}} == 1)"
    assert ast.literal_eval(down.expr[len("absent(up{job="):-len("} == 1)")]) == job
    assert actions(down.description) == [ESCAPED_BRACE] * job.count("{")
    rule = next(r for r in rules_file(parse_settings(raw), "dev")["groups"][0]["rules"]
                if r["alert"] == "KueueCohortsKueueDown")
    assert rule["expr"] == down.expr


def test_label_matchers_are_promql_strings():
    assert label_matcher(['a"b']) == '="a\\"b"'
    assert label_matcher(["a.b", "c"]) == '=~"a\\\\.b|c"'
