"""The JSON Schema of the gateway config file, generated from its model.

``python -m gateway.config.schema`` rewrites ``configs/gateway.schema.json``, which YAML editors use
through the ``# yaml-language-server: $schema=gateway.schema.json`` line of the example config.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

from gateway.config.model import GatewayConfig
from policies.schema import json_schema

__all__ = ["SCHEMA_FILE", "main", "schema_text"]

SCHEMA_FILE: Final = Path(__file__).resolve().parents[2] / "configs" / "gateway.schema.json"


def schema_text() -> str:
    """The exact text committed at `SCHEMA_FILE`."""
    schema = json_schema(GatewayConfig, SCHEMA_FILE.name)
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main() -> None:
    """Rewrite the schema file."""
    SCHEMA_FILE.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {SCHEMA_FILE}")


if __name__ == "__main__":
    main()
