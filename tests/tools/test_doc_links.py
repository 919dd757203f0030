"""Every relative link in README.md and docs/ leads to a file that exists,
and every #anchor to a heading of that file, as GitHub makes them."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def unfenced(text):
    """The text without its fenced code blocks."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def prose(text):
    """The text without code blocks and code spans, where brackets are code."""
    return re.sub(r"`[^`\n]*`", "", unfenced(text))


def anchors(path):
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as
    hyphens, a repeated one numbered."""
    seen, found = {}, set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", unfenced(path.read_text(encoding="utf-8")), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return found


def links(document):
    """(target file, anchor or None) for each relative link in the document."""
    for target in LINK.findall(prose(document.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        yield (document.parent / file).resolve() if file else document, anchor or None


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(document):
    broken = [f"{target.relative_to(ROOT)}#{anchor}" if anchor else str(target)
              for target, anchor in links(document)
              if not target.exists() or (anchor and (target.is_dir() or anchor not in anchors(target)))]
    assert broken == []


def test_a_missing_anchor_or_file_is_caught(tmp_path):
    (tmp_path / "a.md").write_text("# Some Title, here\n\n## `code` heading\n[x](b.md) [y](#nowhere)\n"
                                   "[z](#some-title-here) [w](#code-heading)\n", encoding="utf-8")
    found = list(links(tmp_path / "a.md"))
    assert [(t.name, a) for t, a in found] == [("b.md", None), ("a.md", "nowhere"),
                                              ("a.md", "some-title-here"), ("a.md", "code-heading")]
    assert anchors(tmp_path / "a.md") == {"some-title-here", "code-heading"}
    assert not (tmp_path / "b.md").exists()
