"""The config of per-caller credentials: every mistake is named by file, line and key (a
token_exchange server's too)."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest
from credentials_support import KEY_VAR, credentials_config, secret_http, secret_stdio, vault_keys

from gateway.wiring.checks import load_config
from toolsets.errors import ConfigError

WEB = secret_http("web", "http://127.0.0.1:9/mcp")


def _issues(config: Path) -> list[tuple[int | None, str, str]]:
    with pytest.raises(ConfigError) as raised:
        load_config(config)
    return [(i.line, i.key, i.message) for i in raised.value.issues]


EXCHANGE = {"issuer": "http://127.0.0.1:9", "client": {"id": "gw", "secret": "env:GW_SECRET"}}


@pytest.mark.parametrize(
    ("server", "key", "problem"),
    [
        pytest.param(
            {**WEB, "credentials": {"mode": "token_exchange"}},
            "servers.0.credentials.exchange",
            "needs 'exchange' (issuer or token_endpoint, client)",
            id="without-exchange",
        ),
        pytest.param(
            {**secret_stdio("local"), "credentials": {"mode": "token_exchange"}},
            "servers.0.credentials.mode",
            "a stdio server takes no bearer token",
            id="stdio",
        ),
        pytest.param(
            {**WEB, "credentials": {"mode": "token_exchange", "exchange": EXCHANGE}},
            "servers.0.credentials.exchange.client.secret",
            "environment variable GW_SECRET (the client secret) is not set",
            id="secret-unset",
        ),
        pytest.param(
            {
                **WEB,
                "credentials": {
                    "mode": "token_exchange",
                    "exchange": {**EXCHANGE, "token_endpoint": "http://127.0.0.1:9/token"},
                },
            },
            "servers.0.credentials.exchange",
            "give exactly one of 'issuer' (discovery) and 'token_endpoint'",
            id="issuer-and-endpoint",
        ),
    ],
)
def test_a_token_exchange_mistake_is_named_at_its_key(
    tmp_path: Path, server: dict[str, Any], key: str, problem: str
) -> None:
    with vault_keys():
        [(line, found, message)] = _issues(credentials_config(tmp_path, [server]))
    assert found == key
    assert line is not None
    assert problem in message


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        pytest.param(None, f"environment variable {KEY_VAR} is not set", id="unset"),
        pytest.param("not base64!", "is not base64", id="not-base64"),
        pytest.param(base64.b64encode(b"short").decode(), "holds 5 bytes", id="too-short"),
    ],
)
def test_a_missing_or_malformed_vault_key_names_the_key_and_never_its_value(
    tmp_path: Path, value: str | None, problem: str
) -> None:
    with vault_keys():
        config = credentials_config(tmp_path, [WEB])
        os.environ.pop(KEY_VAR)
        if value is not None:
            os.environ[KEY_VAR] = value
        [(line, key, message)] = _issues(config)
    assert (key, line) == ("vault.key", _line_of(config, "key:"))
    assert problem in message
    assert value is None or value not in message


@pytest.mark.parametrize(
    ("server", "key", "problem"),
    [
        pytest.param(
            {**WEB, "credentials": {"mode": "secret"}},
            "servers.0.credentials.header",
            "needs 'header'",
            id="http-without-header",
        ),
        pytest.param(
            {**secret_stdio("local"), "credentials": {"mode": "secret"}},
            "servers.0.credentials.env",
            "needs 'env'",
            id="stdio-without-env",
        ),
    ],
)
def test_a_secret_mode_without_its_header_or_variable_is_named(
    tmp_path: Path, server: dict[str, Any], key: str, problem: str
) -> None:
    with vault_keys():
        issues = _issues(credentials_config(tmp_path, [server]))
    assert [(k, problem in m) for _, k, m in issues] == [(key, True)]


def test_a_secret_mode_without_a_vault_is_named(tmp_path: Path) -> None:
    config = credentials_config(tmp_path, [WEB])
    text = config.read_text().replace(f"vault:\n  key: env:{KEY_VAR}\n", "")
    config.write_text(text)
    [(_, key, message)] = _issues(config)
    assert key == "vault"
    assert "needs vault.key" in message


def _line_of(config: Path, text: str) -> int:
    lines = config.read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.strip().startswith(text))
