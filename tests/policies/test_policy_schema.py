"""The published JSON Schemas match the models, and editors validate real files with them."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema_rs
import pytest
import yaml
from policy_support import DEFAULT_CASES, DEFAULT_POLICY, FIXTURES

from policies.schema import SCHEMA_FILES, schema_text

POLICY_SCHEMA, CASES_SCHEMA = SCHEMA_FILES


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in SCHEMA_FILES])
def test_the_committed_schema_is_the_generated_one(path: Path) -> None:
    assert path.read_text(encoding="utf-8") == schema_text(path), (
        "regenerate with: python -m policies.schema"
    )


def validator(schema: Path) -> jsonschema_rs.Validator:
    return jsonschema_rs.validator_for(json.loads(schema.read_text(encoding="utf-8")))


@pytest.mark.parametrize(
    ("schema", "document"),
    [
        pytest.param(POLICY_SCHEMA, DEFAULT_POLICY, id="default-policy"),
        pytest.param(POLICY_SCHEMA, FIXTURES / "layers" / "team.yaml", id="layer"),
        pytest.param(POLICY_SCHEMA, FIXTURES / "approvals.yaml", id="approvals"),
        pytest.param(CASES_SCHEMA, DEFAULT_CASES, id="default-cases"),
    ],
)
def test_valid_files_validate_against_the_schema(schema: Path, document: Path) -> None:
    assert validator(schema).is_valid(yaml.safe_load(document.read_text(encoding="utf-8")))


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, id=name)
        for name in ("unknown_key.yaml", "wrong_type.yaml", "bad_values.yaml", "bad_glob.yaml")
    ],
)
def test_invalid_files_fail_schema_validation(name: str) -> None:
    document = yaml.safe_load((FIXTURES / "errors" / name).read_text(encoding="utf-8"))
    assert not validator(POLICY_SCHEMA).is_valid(document)
