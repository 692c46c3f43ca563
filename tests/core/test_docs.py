"""The documentation: the README stays short, every relative link lands on a file (and heading) that exists, the
images stay small, and no Markdown or Python file keeps a diary of past work (git log holds the history)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("lecturers.md", "deploy.md", "testing.md", "architecture.md", "performance.md")
SKIP_DIRS = {".venv", ".git", "artifacts", "__pycache__", ".pytest_cache", ".ruff_cache", "node_modules", ".whl", ".gl"}
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
ORDINALS = (
    "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth"
    "|fifteenth|sixteenth"
)
KEPT = " ".join(("kept", "for", "comparison"))  # spelt apart, so this line does not match itself
DIARY = re.compile(rf"\b({ORDINALS}|[0-9]+(st|nd|rd|th)) (session|round)\b|{KEPT}", re.IGNORECASE)


def files(*suffixes: str) -> list[Path]:
    """The repository's files with these suffixes, outside virtual environments, caches and build output."""
    found = []
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        found += [Path(folder) / n for n in names if n.endswith(suffixes)]
    return sorted(found)


def markdown_files() -> list[Path]:
    """README.md, docs/*.md and the other documents next to them."""
    return [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        ROOT / "bench" / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
    ]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*$", text, re.M)}


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move detail to docs/"


def test_the_docs_exist_and_the_readme_links_to_each():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in DOCS:
        assert (ROOT / "docs" / name).is_file(), f"docs/{name} is missing"
        assert f"(docs/{name})" in readme, f"README.md does not link to docs/{name}"


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_an_existing_file(path):
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)  # code blocks hold no links
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{path.relative_to(ROOT)}: broken links {broken}"


def test_the_images_of_the_docs_stay_small():
    images = sorted((ROOT / "docs" / "img").glob("*"))
    sizes = {p.name: p.stat().st_size for p in images}
    assert all(size <= 350 * 1024 for size in sizes.values()), sizes
    assert sum(sizes.values()) <= 2 * 2**20, f"docs/img holds {sum(sizes.values()):,} bytes"


def test_no_file_keeps_a_diary():
    found = [
        f"{p.relative_to(ROOT)}:{i}: {line.strip()[:100]}"
        for p in files(".md", ".py")
        for i, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if DIARY.search(line)
    ]
    assert not found, "history belongs in git log, not in the files:\n" + "\n".join(found)
