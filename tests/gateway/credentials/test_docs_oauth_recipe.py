"""The oauth recipe of docs/credentials.md, run as written: its config (the server's URL pointed
at the MCP SDK's protected upstream, ``auth.public_url`` at the gateway's own address) served on
a free port, with oidc-provider as the authorization server and dynamic registration (the
recipe's default); then its command line through bash: it prints the authorization URL the page
shows, Alice signs in and consents in Chromium, and it prints ``connected to notes``. Her calls
to ``notes__*`` then reach the upstream as her, in both eras. The section's other observables
are checked too: the REST answer, one client per issuer, the callback under ``public_url`` (else
``listen``), the events, and the revoke after which her next call is held with a link that goes
on to the authorization server."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio
import httpx2
import pytest
from anyio.abc import ByteReceiveStream, Process
from anyio.streams.buffered import BufferedByteReceiveStream
from credentials_support import new_key
from oauth import (
    CLIENT_ID,
    USERS,
    Provider,
    Upstream,
    browser_login,
    oidc_provider,
)
from oauth_gateway import tokens_of
from paths import REPO
from support import MODES, free_port, mcp_http_client, serve_asgi

from gateway.events.model import Event
from gateway.gateway import Gateway
from gateway.http.app import build_app

PAGE = REPO / "docs" / "credentials.md"
ALICE, ALICE_TOKEN = "agent:alice", "alice-agent-token"
LOCKGATE = f"{sys.executable} -m gateway.cli"
EXAMPLE_SERVER, EXAMPLE_PUBLIC = "https://notes.example.com/mcp", "https://lockgate.example.com"
"""What the recipe names that a reader replaces with their own."""
DEADLINE = 300
"""Seconds the whole recipe may take on a loaded machine (Chromium, node, the CLI's polling)."""


def _section() -> str:
    """The page's "Recipe: oauth" section, up to the next heading of its level."""
    text = PAGE.read_text()
    start = text.index("## Recipe: oauth\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def _block(language: str) -> str:
    [block] = re.findall(rf"```{language}\n(.*?)```", _section(), re.S)
    return block


@dataclass(frozen=True)
class Transcript:
    """The section's ``text`` block: the command, then what it prints."""

    command: str
    opening: str
    url: str
    closing: str

    @classmethod
    def of_page(cls) -> Transcript:
        command, opening, url, closing = _block("text").strip().splitlines()
        return cls(command, opening, url, closing)


def _config(directory: Path, upstream: str, public_url: str | None, port: int) -> Path:
    """The recipe's config: the server at ``upstream``, ``auth.public_url`` the gateway's (or no
    ``public_url`` at all, and ``listen`` on ``port``)."""
    text = _block("yaml")
    line = f"public_url: {EXAMPLE_PUBLIC}"
    assert EXAMPLE_SERVER in text, "the recipe's config changed: adapt the test"
    assert line in text, "the recipe's config changed: adapt the test"
    text = text.replace(EXAMPLE_SERVER, upstream)
    if public_url is None:
        text = re.sub(r"^ *public_url:.*\n", "", text, flags=re.M) + f"listen:\n  port: {port}\n"
    else:
        text = text.replace(line, f"public_url: {public_url}")
    path = directory / "credentials.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    async with oidc_provider(tmp_path_factory) as running:  # clients register themselves
        yield running


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the reader exported before `lockgate serve` (the secret recipe's first block)."""
    monkeypatch.setenv("LOCKGATE_VAULT_KEY", new_key())
    monkeypatch.setenv("ALICE_TOKEN", ALICE_TOKEN)


@contextlib.asynccontextmanager
async def _served(config: Path, port: int) -> AsyncIterator[Gateway]:
    gateway = Gateway.from_config(config)
    async with serve_asgi(build_app(gateway), port):
        yield gateway


async def _rest_connect(base: str) -> dict[str, Any]:
    """``POST /api/connections/notes/connect`` with Alice's token: its JSON answer."""
    headers = {"Authorization": f"Bearer {ALICE_TOKEN}"}
    async with httpx2.AsyncClient(base_url=base, headers=headers, timeout=60) as api:
        answer = await api.post("/api/connections/notes/connect")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


@contextlib.asynccontextmanager
async def _bash(command: str, base: str) -> AsyncIterator[Process]:
    """``command`` from the page run by bash (our interpreter for ``.venv/bin/lockgate``, the
    gateway's address in ``LOCKGATE_URL``); killed with its children if the block fails."""
    script = command.replace(".venv/bin/lockgate", LOCKGATE)
    env = {**os.environ, "LOCKGATE_URL": base}
    pipe = subprocess.PIPE
    process = await anyio.open_process(
        ["bash", "-euc", script], env=env, stdout=pipe, stderr=pipe, start_new_session=True
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            os.killpg(process.pid, signal.SIGKILL)
        with anyio.CancelScope(shield=True):
            await process.aclose()


async def _all_of(stream: ByteReceiveStream | None) -> str:
    assert stream is not None
    chunks = []
    with contextlib.suppress(anyio.EndOfStream):
        while True:
            chunks.append(await stream.receive())
    return b"".join(chunks).decode()


async def _run_connect(command: str, base: str) -> tuple[list[str], str]:
    """Run the connect command; once it has printed the authorization URL, Alice signs in and
    consents in Chromium. What it printed, line by line, and where the browser landed."""
    async with _bash(command, base) as process:
        out = BufferedByteReceiveStream(_present(process.stdout))
        try:
            printed = [(await out.receive_until(b"\n", 1 << 16)).decode() for _ in range(2)]
        except anyio.IncompleteRead:
            raise AssertionError(f"it failed: {await _all_of(process.stderr)}") from None
        landed = await browser_login(printed[1], "alice", USERS["alice"])
        printed += (await _all_of(out)).splitlines()
        code = await process.wait()
        assert code == 0, (printed, await _all_of(process.stderr))
    return printed, landed


def _present(stream: ByteReceiveStream | None) -> ByteReceiveStream:
    assert stream is not None
    return stream


async def _run(command: str, base: str) -> str:
    async with _bash(command, base) as process:
        out, err = await _all_of(process.stdout), await _all_of(process.stderr)
        assert await process.wait() == 0, err
    return out


def _asked(url: str, authorize: str, upstream: str) -> dict[str, str]:
    """The parameters of authorization URL ``url``, checked against the page's example."""
    assert url.startswith(f"{authorize}?"), url
    asked = dict(parse_qsl(urlsplit(url).query))
    for name, value in parse_qsl(urlsplit(Transcript.of_page().url).query):
        assert name in asked, (name, url)
        if value != "...":
            assert asked[name] == value.replace(EXAMPLE_SERVER, upstream), (name, url)
    assert asked["code_challenge"]
    assert {"notes:read", "notes:write"} <= set(asked["scope"].split())  # the recipe's scopes
    return asked


async def _whoami(base: str, mode: str) -> dict[str, Any]:
    async with mcp_http_client(f"{base}/mcp", mode, ALICE_TOKEN) as alice:
        result = await alice.call_tool("notes__whoami", {})
    assert not result.is_error, result
    assert result.structured_content is not None
    return result.structured_content


@dataclass
class Run:
    """What running the recipe showed."""

    rest: dict[str, Any]
    printed: list[str]
    landed: str
    whoami: list[dict[str, Any]]
    tokens: list[str]
    revoked: str = ""
    refusal: dict[str, Any] | None = None
    link: httpx2.Response | None = None
    events: list[Event] | None = None


async def _connect_and_call(gateway: Gateway, base: str) -> Run:
    rest = await _rest_connect(base)
    printed, landed = await _run_connect(Transcript.of_page().command, base)
    whoami = [await _whoami(base, mode) for mode in MODES]
    return Run(rest, printed, landed, whoami, await tokens_of(gateway, ALICE))


async def _revoke_and_call(run: Run, base: str) -> None:
    """The section's revoke command, then a call (held: answered with a connect link), then
    the link opened as a browser would (without following where it sends the browser)."""
    [revoke] = re.findall(r"`(lockgate\s+connections\s+revoke\s+notes)`", _section())
    revoke = " ".join(revoke.split())  # the page wraps it
    run.revoked = await _run(f"LOCKGATE_TOKEN=$ALICE_TOKEN .venv/bin/{revoke}", base)
    async with mcp_http_client(f"{base}/mcp", "legacy", ALICE_TOKEN) as alice:
        held = await alice.call_tool("notes__whoami", {})
    assert held.is_error, held
    assert held.meta is not None
    run.refusal = held.meta["lockgate/refusal"]
    async with httpx2.AsyncClient(timeout=60) as browser:
        run.link = await browser.get(run.refusal["unblock"]["url"])


async def test_the_oauth_recipe_runs_as_written(
    tmp_path: Path, provider: Provider, upstream: Upstream
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    config = _config(tmp_path, upstream.url, base, port)
    authorize = str((await provider.discovery())["authorization_endpoint"])
    with anyio.fail_after(DEADLINE):
        async with (
            _served(config, port) as gateway,
            gateway.parts.events.bus.subscribe(["credential.*"]) as events,
        ):
            run = await _connect_and_call(gateway, base)
            await _revoke_and_call(run, base)
            run.events = events.ready(1_000)
    vault = b"".join(f.read_bytes() for f in sorted((tmp_path / "var").glob("pending.db*")))
    assert vault
    assert run.tokens
    assert not [t[:12] for t in run.tokens if t.encode() in vault]  # sealed, never in clear
    _check_connected(run, authorize, upstream, base)
    _check_revoked(run, authorize, upstream)
    _check_events(run, upstream)


def _check_connected(run: Run, authorize: str, upstream: Upstream, base: str) -> None:
    page = Transcript.of_page()
    assert set(run.rest) == {"server", "url"}, run.rest
    assert run.rest["server"] == "notes"
    first = _asked(run.rest["url"], authorize, upstream.url)
    assert [run.printed[0], run.printed[-1]] == [page.opening, page.closing], run.printed
    assert len(run.printed) == 3, run.printed
    asked = _asked(run.printed[1], authorize, upstream.url)
    assert asked["client_id"] == first["client_id"] != CLIENT_ID  # registered, once
    assert asked["redirect_uri"] == f"{base}/oauth/callback"  # under auth.public_url
    assert run.landed.startswith(f"{base}/oauth/callback?"), run.landed
    for who in run.whoami:  # one per era
        assert (who["sub"], who["aud"]) == ("alice", upstream.url), who
        assert who["client_id"] == asked["client_id"]
    assert run.tokens[0] in upstream.seen.tokens  # her access token, as the vault holds it
    assert len(run.whoami) == len(MODES)


def _check_revoked(run: Run, authorize: str, upstream: Upstream) -> None:
    assert "revoked (and at its authorization server)" in run.revoked, run.revoked
    assert run.refusal is not None
    assert run.refusal["kind"] == "not_connected", run.refusal
    assert run.refusal["unblock"]["action"] == "connect"
    assert run.link is not None
    assert run.link.status_code == 303, run.link
    _asked(run.link.headers["location"], authorize, upstream.url)  # the same authorization URL


def _check_events(run: Run, upstream: Upstream) -> None:
    assert run.events is not None
    kinds = [(e.type, e.data["principal"], e.data["server"]) for e in run.events]
    assert kinds == [
        ("credential.connected", ALICE, "notes"),
        ("credential.revoked", ALICE, "notes"),
        ("credential.required", ALICE, "notes"),  # the held call
    ]
    connected = run.events[0].data
    assert {"connection_id", "scopes", "expires_at", "status"} <= set(connected), connected
    assert connected["status"] == "ok"
    written = [json.dumps(e.to_cloudevent(), default=str) for e in run.events]
    written += [*run.printed, run.revoked, run.landed]
    tokens = {*run.tokens, *upstream.seen.tokens}
    assert tokens
    assert not [t[:12] for t in tokens for text in written if t in text]


async def test_without_public_url_the_callback_is_where_the_gateway_listens(
    tmp_path: Path, upstream: Upstream
) -> None:
    port = free_port()
    config = _config(tmp_path, upstream.url, None, port)
    with anyio.fail_after(DEADLINE):
        async with _served(config, port):
            started = await _rest_connect(f"http://127.0.0.1:{port}")
    asked = dict(parse_qsl(urlsplit(started["url"]).query))
    assert asked["redirect_uri"] == f"http://127.0.0.1:{port}/oauth/callback"
