"""The docs site builds with ``mkdocs build --strict``, and its configuration reference, generated
from ``configs/gateway.schema.json`` by the hook in ``docs/_gen/``, covers every key of the schema.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from html import unescape
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).parents[2]
GENERATOR = ROOT / "docs" / "_gen" / "config_reference.py"
SCHEMA: dict[str, Any] = json.loads((ROOT / "configs" / "gateway.schema.json").read_text())
HAS_MKDOCS = all(importlib.util.find_spec(name) for name in ("mkdocs", "material"))


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("config_reference", GENERATOR)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once with ``mkdocs build --strict`` from the repository root."""
    if not HAS_MKDOCS:
        pytest.skip("mkdocs-material is not installed: .venv/bin/pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    assert "WARNING" not in built.stderr, built.stderr
    return out


def _text(page: Path) -> str:
    return unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def test_the_docs_site_builds_in_strict_mode_with_every_page_of_the_nav(site: Path) -> None:
    for page in ("getting-started", "servers", "clients", "service", "reference/configuration"):
        assert (site / page / "index.html").is_file(), page


def test_the_built_configuration_reference_names_every_top_level_key(site: Path) -> None:
    text = _text(site / "reference" / "configuration" / "index.html")
    missing = [key for key in SCHEMA["properties"] if key not in text]
    assert not missing, f"the built reference lacks {missing}"


def test_the_generated_reference_has_a_section_for_every_top_level_key() -> None:
    page = _generator().render(SCHEMA)
    headings = re.findall(r"^## `([a-z_]+)`$", page, flags=re.M)
    assert sorted(headings) == sorted(SCHEMA["properties"])


def test_the_generated_reference_has_a_row_for_every_key_of_every_section() -> None:
    page = _generator().render(SCHEMA)
    rows = set(re.findall(r"^\| `([A-Za-z_]+)` \|", page, flags=re.M))
    for name, definition in SCHEMA["$defs"].items():
        missing = set(definition.get("properties", {})) - rows
        assert not missing, f"{name}: no row for {sorted(missing)}"


def _documented_commands() -> list[tuple[str, str]]:
    """Every ``lockgate`` command line of the docs' shell and unit-file blocks, with its page."""
    found: list[tuple[str, str]] = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"```(?:sh|ini)\n(.*?)```", text, flags=re.S):
            for line in block.splitlines():
                command = line.split("  #", 1)[0].strip().removesuffix(" &")
                matched = re.match(r"^(?:Exec\w*=)?(\S*\.venv/bin/lockgate(\s.*)?)$", command)
                if matched:
                    found.append((str(page.relative_to(ROOT)), matched.group(1)))
    return found


def test_every_lockgate_command_in_the_docs_is_one_the_cli_accepts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from gateway.cli.main import build_parser

    parser = build_parser()
    commands = _documented_commands()
    assert len(commands) > 30
    refused: list[str] = []
    for page, command in commands:
        try:
            parser.parse_args(shlex.split(command)[1:])
        except SystemExit:
            refused.append(f"{page}: {command}: {capsys.readouterr().err.strip()}")
    assert not refused, "\n".join(refused)


def _yaml_snippets() -> list[tuple[str, Any]]:
    """Every YAML block of the docs (an included file aside), parsed, with its page; a bare list
    of rules stands for a policy's ``rules``."""
    found: list[tuple[str, Any]] = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for block in re.findall(r"```yaml\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            if block.startswith("--8<--"):
                continue
            data = yaml.safe_load(block)
            data = {"rules": data} if isinstance(data, list) else data
            found.append((str(page.relative_to(ROOT)), data))
    return found


def test_every_config_and_policy_snippet_in_the_docs_is_valid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pydantic import ValidationError

    from gateway import GatewayConfig
    from policies import PolicyHolder
    from toolsets.errors import LockgateError

    snippets = _yaml_snippets()
    assert len(snippets) > 10
    for name in set(re.findall(r"env:([A-Z_][A-Z0-9_]*)", json.dumps([d for _, d in snippets]))):
        monkeypatch.setenv(name, base64.b64encode(bytes(32)).decode())  # a value of every form
    wrong: list[str] = []
    for index, (page, data) in enumerate(snippets):
        try:
            if {"rules", "defaults", "groups"} & set(data):
                file = tmp_path / f"policy{index}.yaml"
                file.write_text(yaml.safe_dump({"version": 1, **data}))
                PolicyHolder.load([file])
            else:
                GatewayConfig.model_validate(data)
        except (LockgateError, ValidationError) as exc:
            wrong.append(f"{page}: {exc}")
    assert not wrong, "\n".join(wrong)


def test_every_json_block_in_the_docs_parses() -> None:
    blocks = [
        (page, block)
        for page in sorted((ROOT / "docs").rglob("*.md"))
        for block in re.findall(r"```json\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    ]
    assert len(blocks) >= 4
    for page, block in blocks:
        assert isinstance(json.loads(block), dict), page
