#!/usr/bin/env python3
"""Writes the code block that follows "<!-- recipes example: NAME -->" in a
markdown file to OUT, so that the build compiles the docs' examples as they
are written: extract_doc_example.py DOC NAME OUT."""
import pathlib
import sys


def main():
    doc, name, out = sys.argv[1:4]
    text = pathlib.Path(doc).read_text()
    marker = f"<!-- recipes example: {name} -->"
    at = text.find(marker)
    if at < 0:
        sys.exit(f"{doc}: no '{marker}'")
    start = text.find("```", at)
    body_start = text.find("\n", start) + 1
    end = text.find("\n```", body_start)
    if start < 0 or end < 0:
        sys.exit(f"{doc}: no code block after '{marker}'")
    code = text[body_start:end + 1]
    path = pathlib.Path(out)
    # Unchanged text leaves the file alone, so nothing rebuilds.
    if not path.exists() or path.read_text() != code:
        path.write_text(code)


if __name__ == "__main__":
    main()
