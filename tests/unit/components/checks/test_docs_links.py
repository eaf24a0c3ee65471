"""Docs a user can find (issue 27 item 5): every relative link and #anchor of README.md, docs/*.md and the packages'
pages resolves, every generated block is the generated one, the README's tour names every command and links every
page, and each page starts with what a user does with it."""
from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.cli import COMMANDS
from kueue_cohorts.components.checks import docs
from tests.helpers import ROOT

README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
GENERATED = {"config-reference": (docs.CONFIGURATION, docs.reference_table)}
"""Every `<!-- NAME:start -->` ... `<!-- NAME:end -->` block of the documentation: the page it belongs on and the
function that writes it (with its markers)."""


def _section(text: str, heading: str) -> str:
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def _problems(tmp_path: Path, pages: dict[str, str]) -> list[str]:
    for name, text in pages.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return docs.link_problems(tmp_path, [tmp_path / name for name in pages])


def test_every_link_and_anchor_of_the_documentation_resolves():
    assert docs.link_problems() == []


def test_the_documentation_pages_are_the_ones_checked():
    checked = {p.relative_to(ROOT) for g in docs.PAGE_GLOBS for p in ROOT.glob(g)}
    assert {Path("README.md"), Path("kueue_cohorts/policy/README.md"),
            Path("kueue_cohorts/trainer/RECIPES.md")} <= checked
    assert {p.relative_to(ROOT) for p in PAGES} <= checked
    assert len(PAGES) >= 10


def test_every_generated_block_is_the_generated_one():
    found: dict[str, Path] = {}
    for path in [README, *PAGES]:
        for name in re.findall(r"<!-- ([\w-]+):start -->", path.read_text()):
            assert name not in found, f"{name} is generated into {found[name]} and {path}"
            found[name] = path
    assert set(found) == set(GENERATED), "a generated block without a generator (or one missing its page)"
    for name, (page, generate) in GENERATED.items():
        assert found[name] == page
        text = page.read_text()
        start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
        block = text[text.index(start):text.index(end) + len(end)]
        assert block == generate(), (
            f"{page.relative_to(ROOT)} is stale: run python -m kueue_cohorts.components.checks.docs --write")


def test_the_readme_tour_names_every_command_with_its_page():
    tour = _section(README.read_text(), "A tour of the commands")
    rows = [line for line in tour.splitlines() if line.startswith("| `")]
    named = [name for row in rows for name in re.findall(r"`([a-z-]+)`", row.split("|")[1])]
    assert sorted(named) == sorted(COMMANDS)
    assert all(re.search(r"\]\((docs|policy|trainer)/[^)]+\)", row) for row in rows)


def test_the_readme_fits_on_a_few_screens_and_links_every_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 120
    assert text.index("## The two commands") < text.index("## A tour of the commands") < text.index("## Documentation")
    assert "make up" in _section(text, "The two commands") and "make test" in _section(text, "The two commands")
    linked = {target.split("#")[0] for _, target in docs.read_page(text).links}
    assert {f"docs/{p.name}" for p in PAGES} <= linked


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_each_page_starts_with_what_a_user_does_with_it(page):
    title, rest = page.read_text().split("\n\n", 1)
    assert title.startswith("# ") and "\n" not in title
    assert rest.startswith("Read this "), f"{page.name}: the first paragraph says what a user does with the page"


# The checker itself, on pages written for the case.

def test_a_missing_file_and_a_missing_anchor_are_named_with_their_line(tmp_path):
    problems = _problems(tmp_path, {
        "README.md": "# Top\n\nSee [the guide](docs/guide.md#setup) and\n[gone](docs/gone.md).\n",
        "docs/guide.md": "# Guide\n\n## Set up\n\nBack to [top](../README.md#top), [nowhere](#setup).\n",
    })
    assert problems == [
        "README.md:3: docs/guide.md#setup: docs/guide.md has no heading with the anchor #setup",
        "README.md:4: docs/gone.md: no such file or directory",
        "docs/guide.md:5: #setup: docs/guide.md has no heading with the anchor #setup",
    ]


def test_code_fences_and_code_spans_hold_no_links_nor_headings(tmp_path):
    page = ("# Page\n\n````markdown\n### Sample\n```\n[x](missing.md)\n```\n````\n\n"
            "`[y](missing.md)` and ``a ` [z](missing.md)`` stay code.\n\n~~~\n# not a heading\n~~~\n")
    assert docs.read_page(page).anchors == {"page"}
    assert docs.read_page(page).links == ()
    assert _problems(tmp_path, {"a.md": page + "\n[sample](#sample)\n"}) == [
        "a.md:16: #sample: a.md has no heading with the anchor #sample"]


def test_repeated_headings_get_numbered_anchors_and_link_text_may_wrap(tmp_path):
    page = "# A\n\n## Notes\n\n## Notes\n\nSee [the second\nnotes](#notes-1), [`code` *here*](#notes).\n"
    assert docs.read_page(page).anchors == {"a", "notes", "notes-1"}
    assert _problems(tmp_path, {"a.md": page}) == []


def test_what_the_check_cannot_judge_is_a_problem_never_a_pass(tmp_path):
    problems = _problems(tmp_path, {
        "a.md": "Title\n=====\n\n[ref]: b.md\n\n<a name=\"x\"></a>\n\n[code](a.py#L1) [up](../outside.md)\n",
        "a.py": "x = 1\n",
    })
    assert [p.split(": ", 1)[0] for p in problems] == ["a.md:2", "a.md:4", "a.md:6", "a.md:8", "a.md:8"]
    assert "setext" in problems[0] and "reference-style" in problems[1] and "HTML anchor" in problems[2]
    assert "not Markdown" in problems[3] and "outside the repository" in problems[4]


def test_links_with_a_scheme_are_not_followed(tmp_path):
    page = "# A\n\n[issue](https://github.com/pulumi/pulumi-kubernetes/issues/2926) [mail](mailto:x@example.com)\n"
    assert _problems(tmp_path, {"a.md": page}) == []


@pytest.mark.parametrize(("heading", "anchor"), [
    ("Cohorts on a live cluster: status and verify", "cohorts-on-a-live-cluster-status-and-verify"),
    ("Several GPU types (ResourceFlavors)", "several-gpu-types-resourceflavors"),
    ("Stack `staging` — preview against `main`", "stack-staging--preview-against-main"),
    ("The `kueue_cohorts` command, [linked](x.md)", "the-kueue_cohorts-command-linked"),
    ("Rolling out on a cluster that already runs workloads: Warn, then Deny",
     "rolling-out-on-a-cluster-that-already-runs-workloads-warn-then-deny"),
])
def test_a_heading_gets_the_anchor_github_gives_it(heading, anchor):
    assert docs.slug(heading) == anchor


HEADING_TEXT = st.text(string.ascii_letters + string.digits + " -_.:,()`'!?&/", min_size=1, max_size=30).filter(
    lambda s: s.strip() and not s.strip().strip("#").strip() == "" and not s.startswith(" ") and "``" not in s)


@settings(max_examples=60, deadline=None)
@given(st.lists(HEADING_TEXT, min_size=1, max_size=6), st.text(string.ascii_lowercase, min_size=1, max_size=8))
def test_a_link_to_each_heading_resolves_and_one_to_no_heading_does_not(tmp_path_factory, headings, stray):
    tmp_path = tmp_path_factory.mktemp("page")
    anchors = docs.read_page("\n\n".join(f"## {h}" for h in headings)).anchors
    links = " ".join(f"[{i}](#{a})" for i, a in enumerate(sorted(anchors)))
    page = "\n\n".join(f"## {h}" for h in headings) + f"\n\n{links}\n"
    assert _problems(tmp_path, {"a.md": page}) == []
    if f"zz-{stray}" not in anchors:
        assert _problems(tmp_path, {"a.md": page + f"\n[stray](#zz-{stray})\n"}) != []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(string.printable.replace("`", "").replace("~", "").replace("\r", "").replace("\x0b", "")
                        .replace("\x0c", ""), max_size=40), max_size=8))
def test_nothing_inside_a_fence_counts(lines):
    body = "\n".join(line.replace("\n", " ") for line in lines)
    page = docs.read_page(f"# A\n\n```text\n{body}\n```\n")
    assert page.anchors == {"a"} and page.links == () and page.unsupported == ()
