"""Adding an ``npx`` server as docs/servers.md shows, with a real MCP server package from the npm
registry installed into the test's own folder.

The page's stdio YAML block is read from the page; its ``npx`` filesystem entry is used as
written except for the folder it serves (a tmp folder in place of ``/srv/shared``) and where
``npx`` finds the package: ``cwd`` is the install folder and ``npm_config_offline`` is set, so
the package installed here is the one that runs (``npx`` cannot fetch another). ``lockgate
doctor`` checks the config, a gateway serves it, and the SDK client lists the tools under the
server's prefix (those the YAML comment names among them) and calls one.

``npm install`` needs the registry (a fresh cache under the test's tmp folder: nothing outside
it is read or written); it took about 5 s here. The test is skipped only when ``npm`` is missing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from readme_support import ROOT, block, run, section
from support import mcp_http_client, serve_asgi, write_config

from gateway.gateway import Gateway
from gateway.http.app import build_app

PAGE = (ROOT / "docs" / "servers.md").read_text(encoding="utf-8")
STDIO = block(section(PAGE, "A stdio server (`npx`, `uvx`, any command)"), "yaml")
PACKAGE = "@modelcontextprotocol/server-filesystem"
NPM = shutil.which("npm")
INSTALL_TIMEOUT = 180


def page_entry() -> dict[str, Any]:
    """The page's ``npx`` entry for ``PACKAGE``."""
    servers: list[dict[str, Any]] = yaml.safe_load(STDIO)["servers"]
    found = [s for s in servers if s.get("command") == "npx" and PACKAGE in s.get("args", [])]
    assert len(found) == 1, f"docs/servers.md has no single npx entry for {PACKAGE}"
    return found[0]


def named_tools() -> list[str]:
    """The tools the YAML comment on the entry's ``name`` line promises."""
    found = re.search(r"^\s*- name: \S+\s+# tools: (.*)$", STDIO, re.M)
    assert found is not None, "the npx entry's comment no longer names its tools"
    return [name.strip() for name in found.group(1).split(",") if name.strip() != "..."]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``PACKAGE`` installed from the npm registry into a folder of this test, with its own npm
    cache there; the folder."""
    if NPM is None:
        pytest.skip("npm is not installed: the npx recipe of docs/servers.md needs Node.js")
    prefix = tmp_path_factory.mktemp("npm")
    command = [NPM, "install", "--prefix", str(prefix), "--cache", str(prefix / ".cache")]
    command += ["--no-audit", "--no-fund", "--loglevel", "error", PACKAGE]
    started = time.monotonic()
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False
    )
    assert done.returncode == 0, f"npm install {PACKAGE} failed:\n{done.stderr}"
    print(f"npm install {PACKAGE}: {time.monotonic() - started:.1f} s")
    return prefix


def adapted(prefix: Path, shared: Path) -> dict[str, Any]:
    """The page's entry, serving ``shared`` with the package installed in ``prefix``."""
    entry = page_entry()
    args = list(entry["args"])
    assert args[-1] == "/srv/shared", args
    env = {"npm_config_offline": "true", "npm_config_cache": str(prefix / ".cache")}
    return {**entry, "args": [*args[:-1], str(shared)], "cwd": str(prefix), "env": env}


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """The folder the filesystem server serves, holding one note."""
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "note.txt").write_text("kept behind lockgate\n", encoding="utf-8")
    return folder.resolve()


async def test_an_npx_server_added_as_the_page_shows_is_served_under_its_prefix(
    installed: Path, shared: Path, tmp_path: Path
) -> None:
    entry = adapted(installed, shared)
    config = write_config(tmp_path, [entry])
    check = re.search(r"`(lockgate doctor -c CONFIG)`", section(PAGE, "Your servers"))
    assert check is not None, "docs/servers.md no longer says how to check a config"
    command = f".venv/bin/{check.group(1)}"
    doctor = await anyio.to_thread.run_sync(lambda: run(command, cwd=tmp_path, CONFIG=str(config)))
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr

    gateway = Gateway.from_config(config)
    async with (
        serve_asgi(build_app(gateway)) as base,
        mcp_http_client(f"{base}/mcp", "legacy", "none") as client,
    ):
        with anyio.fail_after(60):
            names = [tool.name for tool in (await client.list_tools()).tools]
            listing = await client.call_tool(
                f"{entry['name']}__list_directory", {"path": str(shared)}
            )
            read = await client.call_tool(
                f"{entry['name']}__read_text_file", {"path": str(shared / "note.txt")}
            )

    prefix = f"{entry['name']}__"
    assert names
    assert all(name.startswith(prefix) for name in names), names
    assert set(named_tools()) <= set(names), names
    assert not listing.is_error, listing
    assert "note.txt" in listing.content[0].text  # type: ignore[union-attr]
    assert not read.is_error, read
    assert read.content[0].text == "kept behind lockgate\n"  # type: ignore[union-attr]


async def test_a_file_outside_the_served_folder_stays_out_of_reach(
    installed: Path, shared: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not shared\n", encoding="utf-8")
    entry = adapted(installed, shared)
    config = write_config(tmp_path, [entry])
    async with Gateway.from_config(config) as gateway:
        with anyio.fail_after(60):
            result = await gateway.call_tool(
                f"{entry['name']}__read_text_file", {"path": str(secret)}
            )
    assert result.is_error, result
