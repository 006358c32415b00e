"""The README is a user guide: short, free of the project's history, and true to the code.

Its running commands are checked in tests/test_readme_path.py; here, what can be read off the
text: its length, no commit hashes, issue numbers or paths outside the checkout, the first two
commands CI and a fresh machine depend on, links that resolve, and every setting the code reads
named in it.
"""

from __future__ import annotations

import re

from pydantic import AliasChoices
from pydantic_settings import BaseSettings

from bot.config import Settings
from bot.platforms import PlatformSettings
from connectors.platforms import BUILT_IN
from testkit.runtime import REPO

README = REPO / "README.md"
MAX_LINES = 500
#: the first two fenced commands: CI (.ci/run) and a fresh machine's first steps run exactly these.
FIRST_COMMANDS = (
    "scripts/install.sh && .venv/bin/epmem demo && .venv/bin/epmem chat --as jamie",
    "scripts/install.sh dev && .venv/bin/python -m pytest -q -n auto",
)
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
#: a run of 7-40 hex digits with both a digit and a letter in it: an abbreviated or full commit
HEXLIKE = re.compile(r"(?<![\w/.-])[0-9a-f]{7,40}(?![\w/-])")
ISSUE = re.compile(r"\bissues? \d+\b|(?<![\w&/(])#\d+\b", re.I)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def readme() -> str:
    return README.read_text(encoding="utf-8")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    outside_fences = FENCE.sub("", text)
    return {slug(line.lstrip("#")) for line in outside_fences.splitlines() if line.startswith("#")}


def test_the_readme_is_at_most_500_lines() -> None:
    lines = readme().count("\n")
    assert lines <= MAX_LINES, f"README.md has {lines} lines; the user guide keeps to {MAX_LINES}"


def test_no_commit_hashes_issue_numbers_or_paths_outside_the_checkout() -> None:
    text = readme()
    hashes = [h for h in HEXLIKE.findall(text) if re.search(r"\d", h) and re.search(r"[a-f]", h)]
    assert not hashes, f"commit hashes in README.md: {hashes}"
    assert not ISSUE.findall(text), f"issue references in README.md: {ISSUE.findall(text)}"
    assert "../shared" not in text and "shared/bench" not in text


def test_the_first_two_commands_are_the_ones_ci_runs() -> None:
    blocks = [body.strip() for _, body in FENCE.findall(readme())]
    assert tuple(blocks[:2]) == FIRST_COMMANDS


def test_links_in_the_readme_and_into_it_resolve() -> None:
    text = readme()
    own = anchors(text)
    for target in LINK.findall(FENCE.sub("", text)):
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        if path:
            assert (REPO / path).exists(), f"README.md links to {path}, which is not in the checkout"
        elif anchor:
            assert anchor in own, f"README.md links to #{anchor}; its sections: {sorted(own)}"
    for doc in [REPO / "CONTRIBUTING.md", *(REPO / "docs").glob("*.md"), REPO / "benchmarks/results/README.md"]:
        up = "../" * (len(doc.relative_to(REPO).parts) - 1)
        for anchor in re.findall(rf"\]\({re.escape(up)}README\.md#([\w-]+)\)", doc.read_text(encoding="utf-8")):
            assert anchor in own, f"{doc.relative_to(REPO)} links to README.md#{anchor}, which is gone"


def env_names(kind: type[BaseSettings]) -> set[str]:
    prefix = str(kind.model_config.get("env_prefix") or "")
    names = set()
    for name, field in kind.model_fields.items():
        alias = field.validation_alias
        if isinstance(alias, AliasChoices):
            names.add(str(alias.choices[0]))
        else:
            names.add(f"{prefix}{name}".upper())
    return names


def test_every_setting_the_code_reads_is_in_the_readme() -> None:
    text = readme()
    kinds: list[type[BaseSettings]] = [Settings, PlatformSettings, *(p.settings for p in BUILT_IN)]
    names = set().union(*(env_names(kind) for kind in kinds))
    assert "EPMEM_DATA_DIR" in names and "TELEGRAM_BOT_TOKEN" in names and "EPMEM_SEND_TIMEOUT" in names
    missing = sorted(name for name in names if f"`{name}`" not in text)
    assert not missing, f"settings the code reads but README.md does not name: {missing}"


def test_the_design_is_the_design_not_its_history() -> None:
    """How a reply is decided moved to docs/DESIGN.md: as the design is now, without commits or
    what was tried (that is benchmarks/results/README.md's)."""
    design = (REPO / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    hashes = [h for h in HEXLIKE.findall(design) if re.search(r"\d", h) and re.search(r"[a-f]", h)]
    assert not hashes, f"commit hashes in docs/DESIGN.md: {hashes}"
    assert (
        not ISSUE.findall(design)
        and "tried, not kept" not in design
        and "(not kept)" not in design
        and "../shared" not in design
    )


def test_every_design_section_cited_in_the_code_exists() -> None:
    design = (REPO / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    sections = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\. |^#{2,3} (\d+\.\d+) ", design, re.M))
    numbers = {a or b for a, b in sections}
    cited: dict[str, str] = {}
    for package in ("epmem", "bot", "connectors", "testkit", "benchmarks", "tests"):
        for path in (REPO / package).rglob("*.py"):
            for number in re.findall(r"docs/DESIGN\.md sec\. (\d+(?:\.\d+)?)", path.read_text(encoding="utf-8")):
                cited.setdefault(number.rstrip("."), str(path.relative_to(REPO)))
    assert {"3", "6.5"} <= set(cited)
    missing = {number: path for number, path in cited.items() if number not in numbers}
    assert not missing, f"docs/DESIGN.md has no such section: {missing}"
