"""Command-line overrides are checked like the config file: ``lockgate serve --host 0.0.0.0``
without agent authentication is refused exactly as ``listen.host: 0.0.0.0`` in the file is, and
the message names the flag that set it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from gateway_faces import CLI
from support import write_config

from gateway.wiring.checks import load_config
from toolsets.errors import ConfigError


def _serve(config: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    command = [*CLI, "serve", "-c", str(config), *flags]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_serve_with_a_non_loopback_host_and_no_agent_auth_is_refused(tmp_path: Path) -> None:
    config = write_config(tmp_path, [])

    done = _serve(config, "--host", "0.0.0.0", "--port", "0")

    assert done.returncode != 0
    assert "serving" not in done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert str(config) in lines[0]
    assert "listen.host" in lines[0]
    assert "--host" in lines[0]
    assert "binding beyond loopback requires auth.agents" in lines[0]


@pytest.mark.parametrize(
    ("listen", "problem"),
    [
        pytest.param({"host": "0.0.0.0"}, "binding beyond loopback", id="host"),
        pytest.param({"port": 70000}, "listen.port", id="port-out-of-range"),
    ],
)
def test_overrides_are_checked_after_they_apply(
    tmp_path: Path, listen: dict[str, object], problem: str
) -> None:
    config = write_config(tmp_path, [])
    with pytest.raises(ConfigError) as caught:
        load_config(config, listen=listen)
    assert problem in str(caught.value)


def test_a_loopback_override_of_a_config_without_auth_is_fine(tmp_path: Path) -> None:
    config = write_config(tmp_path, [], listen={"host": "127.0.0.1", "port": 8765})
    loaded = load_config(config, listen={"host": "localhost", "port": 9999})
    assert (loaded.listen.host, loaded.listen.port) == ("localhost", 9999)
