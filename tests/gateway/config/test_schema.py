"""The config file's JSON Schema (for editors) matches the model and accepts the bundled configs."""

from __future__ import annotations

import json

import jsonschema_rs
import pytest
import yaml
from paths import REPO

from gateway.config.schema import SCHEMA_FILE, schema_text

ROOT = REPO


def test_the_committed_schema_is_the_generated_one() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), (
        "regenerate with: python -m gateway.config.schema"
    )


@pytest.mark.parametrize("config", ["configs/gateway.yaml", "examples/gateway.yaml"])
def test_the_bundled_configs_validate_against_it(config: str) -> None:
    validator = jsonschema_rs.validator_for(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))
    document = yaml.safe_load((ROOT / config).read_text(encoding="utf-8"))
    assert validator.is_valid(document)
    assert not validator.is_valid({**document, "listen": {"prot": 8765}})


def test_the_example_config_points_editors_at_it() -> None:
    first = (ROOT / "configs" / "gateway.yaml").read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=gateway.schema.json"
