"""JSON Schemas of the policy and case file formats, generated from the models.

``python -m policies.schema`` rewrites the committed copies next to this module, which YAML
editors use through ``# yaml-language-server: $schema=...`` or their schema settings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel

from policies.cases import CaseFile
from policies.model import PolicyFile

__all__ = ["SCHEMA_FILES", "json_schema", "main", "schema_text"]

_HERE: Final = Path(__file__).parent
SCHEMA_FILES: Final[dict[Path, type[BaseModel]]] = {
    _HERE / "policy.schema.json": PolicyFile,
    _HERE / "cases.schema.json": CaseFile,
}
_BASE_ID: Final = "https://lockgate.dev/schemas/"


def json_schema(model: type[BaseModel], name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``model``, with ``$schema`` and ``$id``."""
    schema = model.model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": _BASE_ID + name,
        **schema,
    }


def schema_text(path: Path) -> str:
    """The exact text committed at ``path`` (one of `SCHEMA_FILES`)."""
    return json.dumps(json_schema(SCHEMA_FILES[path], path.name), indent=2, sort_keys=True) + "\n"


def main() -> None:
    """Rewrite every schema file."""
    for path in SCHEMA_FILES:
        path.write_text(schema_text(path), encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
