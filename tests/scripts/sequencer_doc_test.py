#!/usr/bin/env python3
"""Runs the Python of docs/protocol.md's "Sequencers" as a reader would.

The section's python block is taken from the doc as written and run; its
sign() and verify() must give the doc's test vector (public key and sequencer
text), verify the lock group's grant, and refuse an altered text, a grant of
another group, and one signed with any other key (a replica's, say).

Usage: sequencer_doc_test.py [REPO_ROOT]  (default: two levels above this script)
"""
import re
import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parents[2]).resolve()


def section(text, heading):
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end >= 0 else len(text)]


def main():
    doc = section((ROOT / "docs" / "protocol.md").read_text(), "## Sequencers")
    blocks = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert len(blocks) == 1, f"expected one python block in Sequencers, found {len(blocks)}"
    public_key = re.search(r"the public key is\s+`(psk1\.[A-Za-z0-9_-]+)`", doc).group(1)
    sequencer = re.search(r"and the sequencer is\s+`(ps2\.[A-Za-z0-9_.-]+)`", doc).group(1)

    code = {}
    exec(blocks[0], code)  # the doc's own functions: signing_key, sign, verify, b64
    cluster_key = bytes(range(32))
    key = code["signing_key"](cluster_key, "local-1")
    from cryptography.hazmat.primitives import serialization
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert "psk1." + code["b64"](raw) == public_key, "the doc's public key is not its cluster key's"
    assert code["sign"](key, "local-1", "orders", "exclusive", 7) == sequencer, "sign() does not give the vector"
    assert code["verify"](public_key, "local-1", sequencer) == ("orders", "exclusive", 7)

    def refused(group, text, why):
        try:
            code["verify"](public_key, group, text)
        except Exception:  # ValueError or cryptography's InvalidSignature
            return
        raise AssertionError(f"verify() accepted {why}")

    payload, signature = sequencer[4:].split(".")
    altered = "ps2." + payload + "." + ("A" if signature[0] != "A" else "B") + signature[1:]
    refused("local-1", altered, "an altered signature")
    refused("local-2", sequencer, "another group's grant")
    other = code["signing_key"](bytes(32), "local-1")  # any key but the lock group's
    refused("local-1", code["sign"](other, "local-1", "orders", "exclusive", 1 << 62), "a grant signed with another key")
    refused("local-1", "ps1." + payload + "." + signature, "the older format")
    print("ok: the doc's Python signs the vector and refuses forgeries")


if __name__ == "__main__":
    main()
