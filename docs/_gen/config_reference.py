"""The configuration reference page, rendered from ``configs/gateway.schema.json``.

Used as an MkDocs hook (``hooks:`` in ``mkdocs.yml``): every build adds the page
``reference/configuration.md``, so the reference is always the schema the gateway validates
against and cannot drift from it. ``python docs/_gen/config_reference.py`` prints the page.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "configs" / "gateway.schema.json"
PAGE = "reference/configuration.md"

ORDER = (
    "version",
    "id",
    "listen",
    "servers",
    "policies",
    "approvals",
    "storage",
    "pins",
    "auth",
    "external_tools",
    "events",
    "hooks",
    "sandbox",
    "call_timeout",
    "startup_wait",
)
"""The sections in the order a reader needs them; any others follow in schema order."""

INTRO = """# Configuration reference

Every section and key of the gateway config file (`configs/gateway.yaml`), with its type,
default and description. This page is generated from `configs/gateway.schema.json` (itself
generated from the config models by `.venv/bin/python -m gateway.config.schema`) each time the
docs are built, so it always matches what the gateway accepts. Point your editor at that schema
(the bundled config's first line does) to have the file checked as you type.

Paths are relative to the config file; `python` as a `command` means the interpreter running
lockgate. Unknown keys are errors, and every error names file, line, column and key.
"""

Schema = Mapping[str, Any]


def render(schema: Schema) -> str:
    """The reference page (Markdown) for ``schema``: one section per top-level key.

    Args:
        schema: The gateway config JSON Schema (``$defs`` and ``properties``).

    Returns:
        The page, a level-2 heading per top-level key and a table per object reached from it.
    """
    defs: Schema = schema.get("$defs", {})
    properties: Schema = schema["properties"]
    names = [n for n in ORDER if n in properties]
    names += [n for n in properties if n not in names]
    parts = [INTRO]
    done: dict[str, str] = {}
    for name in names:
        parts.append(_section(name, properties[name], defs, done))
    return "\n".join(parts)


def load_schema(path: Path = SCHEMA) -> Schema:
    """The JSON Schema at ``path`` (the committed gateway schema by default)."""
    loaded: Schema = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _section(name: str, prop: Schema, defs: Schema, done: dict[str, str]) -> str:
    """A top-level key; ``done`` maps each definition already shown to where it was."""
    lines = [f"## `{name}`", ""]
    description = _description(prop, defs)
    if description:
        lines += [description, ""]
    lines += [f"Type: {_type(prop, defs)}. Default: {_default(prop, required=False)}.", ""]
    for path, ref in _objects(name, prop, defs, done):
        if ref in done:
            lines += [f"### `{path}`", "", f"The same keys as `{done[ref]}` above.", ""]
            continue
        done[ref] = path
        lines += _table(path, defs[ref], defs, heading=path != name)
    return "\n".join(lines)


def _objects(
    path: str, prop: Schema, defs: Schema, done: Mapping[str, str]
) -> Iterator[tuple[str, str]]:
    """The definitions reached from ``prop`` (depth first), each with its key path; those in
    ``done`` (shown already) are yielded but not entered again."""
    for suffix, ref in _refs(prop):
        where = path + suffix
        entered = ref in done
        yield where, ref
        if entered:
            continue
        for key, child in defs[ref].get("properties", {}).items():
            yield from _objects(f"{where}.{key}", child, defs, done)


def _refs(prop: Schema) -> Iterator[tuple[str, str]]:
    """The ``$defs`` names ``prop`` points at, with ``[]`` for list items and ``.*`` for maps."""
    if "$ref" in prop:
        yield "", prop["$ref"].rsplit("/", 1)[-1]
    for option in prop.get("anyOf", []):
        yield from _refs(option)
    if isinstance(prop.get("items"), Mapping):
        for suffix, ref in _refs(prop["items"]):
            yield "[]" + suffix, ref
    if isinstance(prop.get("additionalProperties"), Mapping):
        for suffix, ref in _refs(prop["additionalProperties"]):
            yield ".*" + suffix, ref


def _table(path: str, target: Schema, defs: Schema, *, heading: bool) -> list[str]:
    lines: list[str] = []
    if heading:
        lines += [f"### `{path}`", ""]
        if target.get("description"):
            lines += [_cell(target["description"]), ""]
    lines += ["| key | type | default | description |", "|---|---|---|---|"]
    required = set(target.get("required", []))
    for key, prop in target.get("properties", {}).items():
        row = (
            f"`{key}`",
            _cell(_type(prop, defs)),
            _cell(_default(prop, required=key in required)),
            _cell(_description(prop, defs)),
        )
        lines.append("| " + " | ".join(row) + " |")
    return [*lines, ""]


def _description(prop: Schema, defs: Schema) -> str:
    text = prop.get("description")
    if not text and "$ref" in prop:
        text = defs[prop["$ref"].rsplit("/", 1)[-1]].get("description")
    words = [text.replace("``", "`")] if text else []
    words += _constraints(prop)
    return " ".join(words)


def _constraints(prop: Schema) -> list[str]:
    found = {
        "minimum": ">= {}",
        "exclusiveMinimum": "> {}",
        "maximum": "<= {}",
        "minLength": "at least {} characters",
        "maxLength": "at most {} characters",
        "minItems": "at least {} entries",
        "pattern": "matches `{}`",
    }
    said = [template.format(prop[key]) for key, template in found.items() if key in prop]
    if prop.get("writeOnly"):
        said.append("never printed")
    return [f"({'; '.join(said)})"] if said else []


def _type(prop: Schema, defs: Schema) -> str:
    if "$ref" in prop:
        return "object"
    if "const" in prop:
        return f"`{json.dumps(prop['const'])}`"
    if "enum" in prop:
        return " | ".join(f"`{json.dumps(value)}`" for value in prop["enum"])
    if "anyOf" in prop:
        options = [_type(option, defs) for option in prop["anyOf"]]
        return " or ".join(dict.fromkeys(options))
    kind = prop.get("type", "any")
    if kind == "array":
        items = prop.get("items")
        return f"list of {_type(items, defs)}" if isinstance(items, Mapping) else "list"
    if kind == "object" and isinstance(prop.get("additionalProperties"), Mapping):
        return f"map of string to {_type(prop['additionalProperties'], defs)}"
    names = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean"}
    return names.get(kind, str(kind))


def _default(prop: Schema, *, required: bool) -> str:
    if required:
        return "required"
    if "default" not in prop:  # a default_factory: an empty list or map
        kinds = {"array": "`[]`", "object": "`{}`"}
        return kinds.get(prop.get("type", ""), "none")
    value = prop["default"]
    if isinstance(value, Mapping) and value:
        return "see below"
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("``", "`").replace("|", "\\|")


def on_files(files: Any, config: Any) -> Any:
    """MkDocs hook: add the generated reference page to the site's files."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, PAGE, content=render(load_schema())))
    return files


if __name__ == "__main__":
    print(render(load_schema()))
