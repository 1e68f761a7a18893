"""The README and docs/ hold together as a guidebook: every relative link and anchor resolves,
the index lists every guide, and the README stays a short front door."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

DOCS = REPO / "docs"
PAGES = sorted(
    [REPO / "README.md"]
    + [
        page
        for folder in ("docs", "tools", "tests", "optimizer", "console", "telemetry", "docker")
        for page in (REPO / folder).rglob("*.md")
        if "reports" not in page.relative_to(REPO).parts
    ]
)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", flags=re.MULTILINE | re.DOTALL)
HEADING = re.compile(r"^#{1,6} (.+)$", flags=re.MULTILINE)


def _prose(page: Path) -> str:
    return FENCE.sub("", page.read_text())


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, and a
    repeated heading numbered."""
    seen: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(_prose(page)):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    broken = []
    for target in LINK.findall(_prose(page)):
        if re.match(r"[a-z]+:", target):
            continue  # an outside address
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        checks_anchor = anchor and resolved.suffix == ".md"
        if not resolved.exists() or (checks_anchor and anchor not in anchors(resolved)):
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)}: broken links {broken}"


def test_the_index_lists_every_guide() -> None:
    index = _prose(DOCS / "README.md")
    linked = {target.partition("#")[0] for target in LINK.findall(index)}
    guides = {p.name for p in DOCS.glob("*.md") if p.name != "README.md"}
    assert guides <= linked, f"docs/README.md does not list {sorted(guides - linked)}"


def test_the_readme_is_a_short_front_door() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    # The two commands a newcomer needs (docs/contracts.md §0), exactly.
    assert "make run     # set up .venv/" in readme
    assert "make test    # run the test suite" in readme
    assert "(docs/README.md)" in readme
