"""The client configs of docs/clients.md and of the README's "Connect your clients", checked
against what each client sends.

Each snippet is read from the page and taken as its client takes it: the URL and the headers,
with ``TOKEN``, ``${VAR}`` (from the environment the page's ``auth`` block reads the token from)
and VS Code's ``${input:ID}`` (the answer to that prompt) filled in with a real agent token. A
gateway whose ``auth`` is the page's block is served on the snippet's port replaced by a free
one, and the official MCP SDK client connects with that URL and those headers, lists the tools
and calls one, in both eras. Claude Desktop's stdio entry runs as its command, args and env say
(this clone's ``.venv`` and a tmp config in place of the page's ``/path/to/lockgate``).

The gateway has agent tokens, so a snippet with a wrong header (or URL) fails to connect: the
last tests check that such a snippet is indeed refused.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import pytest
import yaml
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from readme_support import BIN, README, ROOT, block, section
from support import MODES, echo_upstream, free_port, serve_asgi, write_config

from gateway.gateway import Gateway
from gateway.http.app import build_app

PAGE = (ROOT / "docs" / "clients.md").read_text(encoding="utf-8")
CONNECT = section(README, "Connect your clients")
AGENT_TOKEN = "docs-clients-agent-token-7f3a9c"
DOCUMENTED_PORT = 8765
"""The port every snippet names (``lockgate serve``'s default)."""
LOCAL = f"http://127.0.0.1:{DOCUMENTED_PORT}"


@dataclass(frozen=True)
class Snippet:
    """What a client sends, as its config says: where, and with which headers."""

    url: str
    headers: Mapping[str, str]


def page_auth(markdown: str) -> dict[str, Any]:
    """The ``auth`` section of the page's one YAML block."""
    auth: dict[str, Any] = yaml.safe_load(block(markdown, "yaml"))["auth"]
    return auth


def environment(auth: Mapping[str, Any]) -> dict[str, str]:
    """The environment the ``auth`` section reads its agents' tokens from, holding the token."""
    variables = [a["token"].removeprefix("env:") for a in auth["agents"] if "token" in a]
    assert variables, "the page's auth block gives no agent a token"
    assert all(not v.startswith(("sha256:", "env:")) for v in variables), variables
    return dict.fromkeys(variables, AGENT_TOKEN)


def fill(value: str, env: Mapping[str, str], inputs: Mapping[str, str] | None = None) -> str:
    """``value`` as the client sends it: ``${input:ID}`` the answer to prompt ID (VS Code),
    ``${NAME}`` from ``env`` (Claude Code), the docs' ``TOKEN`` placeholder the token. A name
    that is not there fails the test (a snippet reading a variable the config does not set)."""
    value = re.sub(r"\$\{input:([^}]+)\}", lambda m: (inputs or {})[m.group(1)], value)
    value = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env[m.group(1)], value)
    return re.sub(r"\bTOKEN\b", AGENT_TOKEN, value)


def claude_mcp_add(markdown: str, env: Mapping[str, str]) -> Snippet:
    """The ``claude mcp add`` line of ``markdown``, parsed as Claude Code parses it."""
    lines = [line for line in block(markdown, "sh").splitlines() if line.startswith("claude ")]
    assert len(lines) == 1, lines
    argv = shlex.split(lines[0])
    assert argv[:3] == ["claude", "mcp", "add"], argv
    parser = argparse.ArgumentParser(prog="claude mcp add", exit_on_error=False)
    parser.add_argument("--transport", "-t", default="stdio")
    parser.add_argument("--header", "-H", action="append", default=[])
    parser.add_argument("name")
    parser.add_argument("url")
    args = parser.parse_args(argv[3:])
    assert args.transport == "http", f"lockgate serves streamable HTTP, not {args.transport}"
    headers = dict(header.split(": ", 1) for header in args.header)
    return Snippet(args.url, {name: fill(value, env) for name, value in headers.items()})


def json_entry(title: str) -> dict[str, Any]:
    """The JSON config of the page's section ``title``."""
    document: dict[str, Any] = json.loads(block(section(PAGE, title), "json"))
    return document


def claude_code_json(env: Mapping[str, str]) -> Snippet:
    """``.mcp.json``: ``mcpServers.NAME`` with ``type: http``, ``url``, ``headers`` (``${VAR}``
    expanded from the environment)."""
    entry = json_entry("Claude Code")["mcpServers"]["lockgate"]
    assert entry["type"] == "http", entry
    return Snippet(entry["url"], {k: fill(v, env) for k, v in entry["headers"].items()})


def cursor_json(env: Mapping[str, str]) -> Snippet:
    """``.cursor/mcp.json``: ``mcpServers.NAME`` with ``url`` and ``headers`` (a URL entry is
    a remote server; ``command`` would make it a stdio one)."""
    entry = json_entry("Cursor")["mcpServers"]["lockgate"]
    assert "command" not in entry, entry
    return Snippet(entry["url"], {k: fill(v, env) for k, v in entry["headers"].items()})


def vscode_json(env: Mapping[str, str]) -> Snippet:
    """``.vscode/mcp.json``: ``servers.NAME`` with ``type: http``; ``${input:ID}`` is the
    answer to the ``promptString`` input ID (the user types the token)."""
    document = json_entry("VS Code")
    answers = {i["id"]: AGENT_TOKEN for i in document["inputs"] if i["type"] == "promptString"}
    entry = document["servers"]["lockgate"]
    assert entry["type"] == "http", entry
    headers = {k: fill(v, env, answers) for k, v in entry["headers"].items()}
    return Snippet(entry["url"], headers)


SNIPPETS = {
    "README claude mcp add": lambda env: claude_mcp_add(CONNECT, env),
    "claude mcp add": lambda env: claude_mcp_add(section(PAGE, "Claude Code"), env),
    "Claude Code .mcp.json": claude_code_json,
    "Cursor": cursor_json,
    "VS Code": vscode_json,
}


def on_port(url: str, port: int) -> str:
    """``url`` with the documented port replaced by ``port``."""
    parts = urlsplit(url)
    assert parts.port == DOCUMENTED_PORT, url
    return parts._replace(netloc=f"{parts.hostname}:{port}").geturl()


async def list_and_call(client: Client) -> None:
    """List the tools and call the echo upstream's ``echo`` through the gateway."""
    with anyio.fail_after(60):
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert "echo__echo" in names, names
        result = await client.call_tool("echo__echo", {"text": "from the docs"})
    assert not result.is_error, result
    assert result.content[0].text == "from the docs"  # type: ignore[union-attr]


async def connect_and_call(snippet: Snippet, mode: str, statuses: list[int] | None = None) -> None:
    """Connect as the client would, with the SDK: the snippet's URL and headers (the status of
    each response goes to ``statuses``)."""

    seen_statuses = statuses if statuses is not None else []

    async def seen(response: httpx2.Response) -> None:
        seen_statuses.append(response.status_code)

    http = httpx2.AsyncClient(
        headers=dict(snippet.headers),
        timeout=httpx2.Timeout(30, read=60),
        event_hooks={"response": [seen]},
    )
    async with http:
        transport = streamable_http_client(snippet.url, http_client=http)
        async with Client(transport, mode=mode, read_timeout_seconds=30) as client:  # type: ignore[arg-type]
            await list_and_call(client)


def served(
    tmp_path: Path, auth: Mapping[str, Any], monkeypatch: pytest.MonkeyPatch
) -> tuple[Gateway, int]:
    """A gateway on an echo upstream with ``auth`` (its token variables set), and the free port
    to serve it on."""
    for variable, value in environment(auth).items():
        monkeypatch.setenv(variable, value)
    config = write_config(tmp_path, [echo_upstream()], auth=dict(auth))
    return Gateway.from_config(config), free_port()


def auth_of(name: str) -> Mapping[str, Any]:
    """The ``auth`` block the snippet ``name``'s page gives."""
    return page_auth(
        CONNECT if name.startswith("README") else section(PAGE, "Give each agent a token")
    )


@pytest.mark.parametrize("name", list(SNIPPETS))
async def test_each_client_config_connects_lists_and_calls_in_both_eras(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    auth = auth_of(name)
    snippet = SNIPPETS[name](environment(auth))
    gateway, port = served(tmp_path, auth, monkeypatch)
    async with serve_asgi(build_app(gateway), port):
        for mode in MODES:
            await connect_and_call(Snippet(on_port(snippet.url, port), snippet.headers), mode)


@pytest.mark.parametrize("mode", MODES)
async def test_the_claude_desktop_entry_runs_as_written_with_its_env(
    mode: str, tmp_path: Path
) -> None:
    entry = json_entry("Claude Desktop")["mcpServers"]["lockgate"]
    clone = "/path/to/lockgate"
    assert entry["command"] == f"{clone}/.venv/bin/lockgate", entry
    assert entry["args"][:2] == ["stdio", "-c"], entry
    assert entry["args"][2].startswith(f"{clone}/"), entry
    # the page's advice for desktop clients: the config holds the token's sha256 digest
    digest = hashlib.sha256(AGENT_TOKEN.encode()).hexdigest()
    agents = [{"id": "agent:claude", "token": f"sha256:{digest}", "roles": ["dev"]}]
    config = write_config(tmp_path, [echo_upstream()], auth={"agents": agents})
    env = {name: fill(value, {}) for name, value in entry["env"].items()}
    server = StdioServerParameters(
        command=entry["command"].replace(f"{clone}/.venv/bin", str(BIN)),
        args=[*entry["args"][:2], str(config), *entry["args"][3:]],
        env=env,
        cwd=str(tmp_path),  # Claude Desktop does not start in the clone
    )
    async with Client(server, mode=mode, read_timeout_seconds=30) as client:  # type: ignore[arg-type]
        await list_and_call(client)


# A wrong snippet fails: the gateway these tests serve refuses it.


@pytest.mark.parametrize(
    ("wrong", "status"),
    [
        (Snippet(f"{LOCAL}/mcp", {"Authorization": "Bearer TOKEN-typo"}), 401),
        (Snippet(f"{LOCAL}/mcp", {"Authorization": "TOKEN"}), 401),
        (Snippet(f"{LOCAL}/mcp", {"X-Api-Key": "TOKEN"}), 401),
        (Snippet(f"{LOCAL}/sse", {"Authorization": "Bearer TOKEN"}), 404),
    ],
    ids=["wrong token", "no Bearer", "other header", "wrong path"],
)
async def test_a_snippet_with_a_wrong_header_or_url_is_refused(
    wrong: Snippet, status: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway, port = served(tmp_path, auth_of("claude mcp add"), monkeypatch)
    snippet = Snippet(on_port(wrong.url, port), {k: fill(v, {}) for k, v in wrong.headers.items()})
    statuses: list[int] = []
    async with serve_asgi(build_app(gateway), port):
        with anyio.fail_after(60), pytest.RaisesGroup(MCPError, flatten_subgroups=True):
            await connect_and_call(snippet, "legacy", statuses)
    assert statuses[:1] == [status]
