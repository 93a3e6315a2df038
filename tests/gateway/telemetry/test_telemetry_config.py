"""The ``telemetry`` section: a bad value names its file, line and key; with the section set but
the ``otel`` extra missing, the gateway does not start and says which package to install."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support import echo_upstream, write_config

from gateway.config.loader import read_config
from gateway.config.telemetry import TelemetryConfig
from toolsets.errors import ConfigError


def test_a_bad_telemetry_value_names_its_file_line_and_key(tmp_path: Path) -> None:
    config = write_config(tmp_path, [echo_upstream()], telemetry={"protocol": "carrier-pigeon"})
    with pytest.raises(ConfigError) as raised:
        read_config(config)
    message = str(raised.value)
    assert str(config) in message
    assert "telemetry.protocol" in message
    line = next(
        i for i, text in enumerate(config.read_text().splitlines(), 1) if "carrier-pigeon" in text
    )
    assert f":{line}:" in message


def test_a_header_read_from_an_unset_variable_is_a_config_error(tmp_path: Path) -> None:
    headers = {"authorization": "env:LOCKGATE_TEST_UNSET_OTLP_TOKEN"}
    config = write_config(tmp_path, [echo_upstream()], telemetry={"headers": headers})
    with pytest.raises(ConfigError, match="LOCKGATE_TEST_UNSET_OTLP_TOKEN"):
        read_config(config)


def test_header_values_never_show_in_the_config_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCKGATE_TEST_OTLP_TOKEN", "Bearer otlp-secret-value")
    settings = TelemetryConfig.model_validate(
        {"headers": {"authorization": "env:LOCKGATE_TEST_OTLP_TOKEN"}}
    )
    assert settings.headers["authorization"].get_secret_value() == "Bearer otlp-secret-value"
    assert "otlp-secret-value" not in repr(settings)
    assert "otlp-secret-value" not in settings.model_dump_json()


def test_telemetry_without_the_otel_extra_is_refused_naming_the_install(tmp_path: Path) -> None:
    # An install without the extra: the MCP SDK brings the OpenTelemetry API, not the SDK.
    shadow = tmp_path / "shadow" / "opentelemetry" / "sdk"
    shadow.mkdir(parents=True)
    missing = "raise ModuleNotFoundError(\"No module named 'opentelemetry.sdk'\")\n"
    (shadow / "__init__.py").write_text(missing)
    config = write_config(tmp_path, [echo_upstream()], telemetry={"endpoint": "http://x:4318"})
    run = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "tools", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PYTHONPATH": str(shadow.parent.parent), "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode != 0
    assert "pip install 'lockgate[otel]'" in run.stderr
    assert f"{config}:" in run.stderr
    assert "telemetry" in run.stderr
