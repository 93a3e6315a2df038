"""The ``presidio`` inspector (skipped without the extra), and the config errors of the
``inspectors:`` section, each naming file, line and key."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from inspector_support import CARD, received, recorder_config

from gateway.gateway import Gateway
from gateway.wiring.checks import load_config
from toolsets import CallContext
from toolsets.errors import ConfigError

PRESIDIO = importlib.util.find_spec("presidio_analyzer") is not None


@pytest.mark.skipif(not PRESIDIO, reason="presidio-analyzer not installed (the presidio extra)")
async def test_presidio_finds_pii_in_arguments_and_they_are_redacted_before_the_upstream(
    tmp_path: Path,
) -> None:
    presidio = {
        "type": "presidio",
        "detectors": ["EMAIL_ADDRESS", "CREDIT_CARD"],
        "tools": ["rec__*"],
        "direction": "arguments",
        "timeout": 30,
    }
    config, log = recorder_config(tmp_path, {"ner": presidio})
    value = f"mail alice@example.com, card {CARD}"
    async with Gateway.from_config(config) as gateway:
        result = await gateway.call_tool("rec__record", {"value": value}, CallContext())
    expected = "mail [REDACTED:EMAIL_ADDRESS], card [REDACTED:CREDIT_CARD]"
    assert received(log)[0]["arguments"] == {"value": expected}
    assert result.first_text() == f"recorded {expected}"


def _issues(path: Path) -> list[tuple[int | None, str, str]]:
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return [(issue.line, issue.key, issue.message) for issue in caught.value.issues]


def test_a_presidio_inspector_without_the_extra_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "presidio_analyzer", None)  # as if not installed
    config, _ = recorder_config(tmp_path, {"ner": {"type": "presidio"}})
    ((_, key, message),) = _issues(config)
    assert key == "inspectors.ner"
    assert "pip install 'lockgate[presidio]'" in message


def test_an_http_inspector_without_a_url_and_an_unknown_detector_are_config_errors(
    tmp_path: Path,
) -> None:
    inspectors = {"ext": {"type": "http"}, "mine": {"detectors": ["email", "dna"]}}
    config, _ = recorder_config(tmp_path, inspectors)
    lines = config.read_text(encoding="utf-8").splitlines()
    issues = _issues(config)
    assert [(key, lines[line - 1].strip()) for line, key, _ in issues if line] == [
        ("inspectors.ext", "ext:"),
        ("inspectors.mine", "mine:"),
    ]
    assert "an http inspector needs a url" in issues[0][2]
    assert "unknown detectors ['dna']" in issues[1][2]
