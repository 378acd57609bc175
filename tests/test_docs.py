"""The documentation's links and the repository paths it names lead somewhere: every relative Markdown link to an
existing file (and a heading of it, for an anchor into a Markdown file), every path in backticks to a file or
folder of this repository."""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

DOCS = sorted(
    {ROOT / "README.md", ROOT / "bench" / "README.md", ROOT / "clients" / "python" / "README.md"}
    | set((ROOT / "docs").glob("*.md"))
)

#: Targets the docs name before they exist, and why. Each must still be missing (see the last test): once it is
#: written, take it off this list so that its links are checked like any other.
#: Where a path named in backticks starts, for it to be taken as a path of this repository.
PREFIXES = ("app/", "bench/", "scripts/", "tests/", "docs/", "migrations/", "deploy/", "clients/", ".ci/")

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose(text: str) -> str:
    """The text with its fenced code blocks blanked out, line for line."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            line = ""
        lines.append("" if fenced else line)
    return "\n".join(lines)


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text, lower case, punctuation dropped but '-' and '_', spaces to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading counts as its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors of a Markdown file's headings; a repeated heading gets -1, -2, … as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose(path.read_text()).splitlines():
        match = HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def broken_links(doc: Path) -> list[str]:
    """Each relative link of ``doc`` that leads nowhere, with its line."""
    problems = []
    text = prose(doc.read_text())
    # A link may run over several lines; code spans are blanked, keeping the offsets, so that a link's text may
    # hold one but a link written inside one does not count.
    text = CODE_SPAN.sub(lambda span: "".join(c if c == "\n" else " " for c in span.group(0)), text)
    for link in LINK.finditer(text):
        href, number = link.group(1), line_of(text, link.start())
        if SCHEME.match(href) or href.startswith("//"):
            continue  # a web address: not this repository's business
        file, _, anchor = href.partition("#")
        target = (doc.parent / file).resolve() if file else doc
        if not target.exists():
            problems.append(f"line {number}: {href}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            problems.append(f"line {number}: {href}: {relative(target)} has no heading #{anchor}")
    return problems


def missing_paths(doc: Path) -> list[str]:
    """Each repository path named in backticks in ``doc`` that does not exist, with its line."""
    problems = []
    text = prose(doc.read_text())
    for span in CODE_SPAN.finditer(text):
        for word in span.group(2).split():
            word = word.rstrip(".,;:)")
            if not word.startswith(PREFIXES) or re.search(r"[^\w./-]", word):
                continue  # not a path, or a pattern (`…/refits/{id}`, `bench/results/<script>.json`)
            if not (ROOT / word).exists():
                problems.append(f"line {line_of(text, span.start())}: `{word}` does not exist")
    return problems


@pytest.mark.parametrize("doc", DOCS, ids=relative)
def test_every_relative_link_leads_to_a_file_and_heading(doc):
    assert broken_links(doc) == []


@pytest.mark.parametrize("doc", DOCS, ids=relative)
def test_every_repository_path_named_exists(doc):
    assert missing_paths(doc) == []


def test_the_checks_catch_a_broken_link_a_missing_anchor_and_a_missing_path(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "there.md").write_text("# A page: here, there & back\n\n## Twice\n\n## Twice\n")
    doc = tmp_path / "README.md"
    doc.write_text(
        "[ok](docs/there.md#a-page-here-there--back) [ok](docs/there.md#twice-1) [ok](#top) [web](https://x.org/y)\n"
        "# Top\n"
        "[gone](docs/gone.md) [bad anchor](docs/there.md#nowhere) `[not a link](docs/gone.md)`\n"
        "```\n[in a fence](docs/gone.md) `docs/gone.md`\n```\n"
        "`docs/there.md`, `python docs/gone.py --flag`, `docs/`, `app/…/x.py`, `docs/<name>.md`\n"
        "[a link over\ntwo lines](docs/also-gone.md) and `a span over\ntwo lines: docs/gone-too.md`\n"
    )
    assert broken_links(doc) == [
        "line 3: docs/gone.md: no such file",
        "line 3: docs/there.md#nowhere: docs/there.md has no heading #nowhere",
        "line 8: docs/also-gone.md: no such file",
    ]
    assert missing_paths(doc) == ["line 7: `docs/gone.py` does not exist", "line 9: `docs/gone-too.md` does not exist"]
