"""The relay test server plus a tool telling which client capabilities the server sees.

Run as ``python tests/upstreams/caps_server.py [--era legacy|modern|dual] [--name NAME]``
(stdio). ``client_capabilities`` answers with the requests the client declared it can answer
(``elicitation``, ``roots``, ``sampling``; JSON, sorted): those of ``initialize`` on a
2025-11-25 connection, those of the call's own ``_meta`` on a 2026-07-28 one.
"""

from __future__ import annotations

# ruff: noqa: E402
from handoff import hand_off

hand_off()  # under pytest, a fork of its zygote runs this: the imports below are done there

import argparse
import json
import warnings

import anyio
from mcp.server.mcpserver import Context
from relay_server import _serve, build

ANSWERABLE = ("elicitation", "roots", "sampling")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--era", choices=["dual", "legacy", "modern"], default="dual")
    parser.add_argument("--name", default="caps")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # deprecation notices of logging, sampling and roots
    server = build(args.name, args.era)

    @server.tool()
    def client_capabilities(ctx: Context) -> str:
        """The requests the client declared it can answer."""
        seen = ctx.client_capabilities
        declared = [name for name in ANSWERABLE if getattr(seen, name, None) is not None]
        return json.dumps(declared)

    anyio.run(_serve, server, args.era)


if __name__ == "__main__":
    main()
