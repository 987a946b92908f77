#!/usr/bin/env python3
"""Checks the repository's markdown links and that nothing cites the external design.

1. Every relative link (or image) in every *.md file points to an existing file
   of the repository, and its #anchor (if any) to a heading of the target, by
   GitHub's slug rules.
2. No file names the design document the project started from, which is not
   part of the repository (docs/design.md replaces it).
3. A citation of a section of docs/design.md (`docs/design.md "Lock group"`,
   also across comment lines) names a heading of it.

Usage: docs_links_test.py [REPO_ROOT]  (default: two levels above this script)
"""
import functools
import os
import re
import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parents[2]).resolve()

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
# Written split so that this file does not match its own patterns.
CITATION = re.compile(r'design\.md(?:\s|//|#)*"([^"\n]+)"')
FORBIDDEN = [re.compile(p) for p in ("DESIGN" r"\.md", "shared/" "DESIGN", "DESIGN" ' "', "DESIGN" "'s")]


def files():
    """Every file of the repository but .git and build directories (build*)."""
    for top, dirs, names in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d != ".git" and not d.startswith("build"))
        for name in sorted(names):
            yield Path(top) / name


def prose(text):
    """(line number, line) of a markdown text, outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(r"^\s*(```|~~~)", line):
            fenced = not fenced
        elif not fenced:
            yield number, line


def slug(heading):
    """GitHub's anchor of a heading: lowercase, punctuation but - and _ dropped, spaces to -."""
    text = re.sub(r"\]\([^)]*\)", "]", heading.strip().lower())  # a link's target is not shown
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@functools.cache
def anchors(path):
    count, found = {}, set()
    for _, line in prose(path.read_text(encoding="utf-8")):
        m = HEADING.match(line)
        if m:
            base = slug(m.group(1))
            n = count.get(base, 0)  # GitHub numbers repeated headings: x, x-1, x-2
            found.add(f"{base}-{n}" if n else base)
            count[base] = n + 1
    return found


def check_links(md):
    errors = []
    text = md.read_text(encoding="utf-8")
    for number, line in prose(text):
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):  # not in inline code
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:, ...
                continue
            file_part, _, anchor = target.partition("#")
            dest = (md.parent / file_part).resolve() if file_part else md
            where = f"{md.relative_to(ROOT)}:{number}: {target}"
            if not dest.is_relative_to(ROOT):
                errors.append(f"{where}: outside the repository")
            elif not dest.exists():
                errors.append(f"{where}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                errors.append(f"{where}: no heading with anchor #{anchor}")
    return errors


def check_citations(path):
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:  # binary (an image)
        return []
    errors = [f"{path.relative_to(ROOT)}:{n}: cites the design outside the repository: {line.strip()}"
              for n, line in enumerate(text.splitlines(), 1)
              if any(p.search(line) for p in FORBIDDEN)]
    design = ROOT / "docs" / "design.md"
    for m in CITATION.finditer(text):
        if design.exists() and slug(m.group(1)) not in anchors(design):
            n = text.count("\n", 0, m.start()) + 1
            errors.append(f"{path.relative_to(ROOT)}:{n}: docs/design.md has no section \"{m.group(1)}\"")
    return errors


def main():
    errors = []
    mds = 0
    for path in files():
        if path.suffix == ".md":
            mds += 1
            errors += check_links(path)
        errors += check_citations(path)
    for e in errors:
        print(e)
    print(f"{mds} markdown files checked, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
