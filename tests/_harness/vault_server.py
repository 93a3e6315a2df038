"""The upstream of the events end-to-end suite: the test echo server plus vault tools.

Run as ``python vault_server.py``; serves stdio in both MCP eras. ``store`` answers with its
``text`` argument unchanged, so a credential in the arguments comes back in the response too;
``put`` repeats its ``value``; the suite's policy denies ``erase``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "upstreams"))
# ruff: noqa: E402
from handoff import hand_off

hand_off()  # under pytest, a fork of its zygote runs this: the imports below are done there

import anyio
from echo_server import _serve_stdio, build


def main() -> None:
    server = build("vault")

    @server.tool()
    def store(text: str, secret: str, pin: str) -> str:
        """Store a secret and a pin under a note; answers with the note."""
        return text

    @server.tool()
    def put(key: str, value: str) -> str:
        """Store ``value`` under ``key``; the answer repeats both (as many real tools do)."""
        return f"stored {key}={value}"

    @server.tool()
    def erase(path: str) -> str:
        """Erase a stored secret (the suite's policy denies it)."""
        return f"erased {path}"

    anyio.run(_serve_stdio, server, "dual")


if __name__ == "__main__":
    main()
