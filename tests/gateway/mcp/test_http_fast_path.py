"""The fast path in front of the SDK's streamable-HTTP app (`gateway/mcp/http_fast_path.py`).

Plain ``tools/call`` POSTs are answered straight from the gateway chain; everything else goes to
the SDK app. Each test checks which path answered (``lockgate_mcp_requests_total{path}``), so
these tests fail if the fast path is switched off. Requests are raw HTTP (``httpx2``), so each
test chooses which path a call takes: a
``progressToken`` in ``params._meta`` always sends it to the SDK. Handshake-era (2025-11-25)
requests ride a session opened over raw HTTP; modern (2026-07-28) requests carry the per-request
envelope. The SDK answers handshake-era POSTs with SSE, the fast path with one JSON body.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from approvals_e2e_support import (
    AGENT,
    AGENT_TOKEN,
    OTHER_AGENT_TOKEN,
    answering,
    e2e_config,
    marker,
)
from gateway_faces import LEGACY, MODERN
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_types.jsonrpc import HEADER_MISMATCH, INVALID_PARAMS
from support import MODES, answered, echo_upstream, serve_asgi, write_config

from gateway.events.bus import Subscription
from gateway.events.model import Event
from gateway.gateway import Gateway
from gateway.http.app import build_app

ERAS = pytest.mark.parametrize("era", ["legacy", "modern"])
HTTP = "http"
ACCEPT = "application/json, text/event-stream"
CLIENT_INFO = {"name": "raw-http", "version": "1.0"}
CANCELLED = "The call was cancelled before it finished."


@dataclass(frozen=True)
class Served:
    """A gateway served by uvicorn: its /mcp URL and the in-process `Gateway` (for its events)."""

    url: str
    gateway: Gateway


@pytest.fixture(scope="module")
async def echo(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    """Echo upstreams: ``dual`` for calls, one per era for cancellation (``wait_cancelled``
    remembers any cancelled ``slow`` call, so each cancellation test has an upstream of its own)."""
    servers = [
        echo_upstream("dual"),
        echo_upstream("cancel-legacy"),
        echo_upstream("cancel-modern"),
    ]
    gateway = Gateway.from_config(write_config(tmp_path_factory.mktemp("express"), servers))
    async with serve_asgi(build_app(gateway)) as base:
        yield Served(f"{base}/mcp", gateway)


@pytest.fixture(scope="module")
async def approvals(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    """The approvals end-to-end gateway: recorder upstream, caller-approval policy, agent tokens."""
    directory = tmp_path_factory.mktemp("express-approvals")
    gateway = Gateway.from_config(e2e_config(directory, log=directory / "executions.jsonl"))
    async with serve_asgi(build_app(gateway)) as base:
        yield Served(f"{base}/mcp", gateway)


@pytest.fixture
async def http() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(10)) as client:
        yield client


@dataclass
class Raw:
    """One client over raw HTTP: a handshake-era session, or modern per-request envelopes."""

    http: httpx2.AsyncClient
    url: str
    era: str
    token: str | None = None
    session: str | None = None

    @property
    def version(self) -> str:
        return LEGACY if self.era == "legacy" else MODERN

    def plain_headers(self) -> dict[str, str]:
        headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def headers(self, method: str, name: str | None = None) -> dict[str, str]:
        headers = self.plain_headers()
        if self.era == "legacy":
            headers["MCP-Protocol-Version"] = LEGACY
            if self.session is not None:
                headers["Mcp-Session-Id"] = self.session
        else:
            headers |= {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
            if name is not None:
                headers["Mcp-Name"] = name
        return headers

    async def open(self) -> Raw:
        """Handshake era: ``initialize`` then ``notifications/initialized``; modern: nothing."""
        if self.era == "legacy":
            params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": CLIENT_INFO}
            body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
            response = await self.http.post(self.url, json=body, headers=self.plain_headers())
            assert response.status_code == 200, response.text
            self.session = response.headers["mcp-session-id"]
            response = await self.notify("notifications/initialized", {})
            assert response.status_code == 202, response.text
        return self

    async def notify(self, method: str, params: dict[str, Any]) -> httpx2.Response:
        body = {"jsonrpc": "2.0", "method": method, "params": params}
        return await self.http.post(self.url, json=body, headers=self.headers(method))

    async def call(
        self,
        name: str,
        args: dict[str, Any],
        *,
        id: int = 1,
        meta: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        token: str | None = None,
    ) -> httpx2.Response:
        """POST ``tools/call``; ``headers`` override the era's, ``token`` the client's."""
        meta = dict(meta or {})
        if self.era == "modern":
            meta[PROTOCOL_VERSION_META_KEY] = MODERN
            meta[CLIENT_CAPABILITIES_META_KEY] = {}
            meta[CLIENT_INFO_META_KEY] = CLIENT_INFO
        params: dict[str, Any] = {"name": name, "arguments": args}
        if meta:
            params["_meta"] = meta
        body = {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}
        sent = self.headers("tools/call", name) | (headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        return await self.http.post(self.url, json=body, headers=sent)


def kind(response: httpx2.Response) -> str:
    """``json`` or ``sse``: how the response is framed."""
    content_type = response.headers.get("content-type", "")
    return "sse" if content_type.startswith("text/event-stream") else "json"


def messages(response: httpx2.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a response, JSON or SSE (SSE events without data skipped)."""
    if kind(response) == "json":
        return [response.json()] if response.content else []
    datas = [line[5:].strip() for line in response.text.splitlines() if line[:5] == "data:"]
    return [json.loads(data) for data in datas if data]


def answer(response: httpx2.Response) -> dict[str, Any]:
    """The one JSON-RPC response (result or error) a response carries."""
    [found] = [m for m in messages(response) if "id" in m]
    return found


def error_of(response: httpx2.Response, status: int) -> dict[str, Any]:
    """The JSON-RPC error a response carries, after checking its HTTP status."""
    assert response.status_code == status, response.text
    error: dict[str, Any] = answer(response)["error"]
    return error


async def event_for(subscription: Subscription, type_: str, tool: str) -> Event:
    async for event in subscription:
        if event.type == type_ and event.data["tool"] == tool:
            return event
    raise AssertionError("the subscription ended")


CALLS = [
    pytest.param("dual__echo", {"text": "héllo ✓ <&>"}, id="echo"),
    pytest.param("dual__echo", {"text": 3}, id="bad-arguments"),
    pytest.param("dual__fail", {"message": "boom"}, id="tool-error"),
    pytest.param("dual__whoami", {}, id="whoami"),
    pytest.param("dual__big", {"kib": 64}, id="big-result"),
]


@ERAS
@pytest.mark.parametrize(("name", "args"), CALLS)
async def test_the_fast_path_answers_what_the_sdk_answers(
    echo: Served, http: httpx2.AsyncClient, era: str, name: str, args: dict[str, Any]
) -> None:
    raw = await Raw(http, echo.url, era).open()
    with anyio.fail_after(30), answered(echo.gateway.metrics, HTTP, fast=1, sdk=1):
        fast = await raw.call(name, args, id=11)
        sdk = await raw.call(name, args, id=11, meta={"progressToken": "p-11"})

    assert (fast.status_code, sdk.status_code) == (200, 200)
    assert answer(fast) == answer(sdk)
    assert fast.headers.get("mcp-session-id") == sdk.headers.get("mcp-session-id") == raw.session


@ERAS
async def test_a_plain_call_is_one_json_body_and_a_progress_call_streams_from_the_sdk(
    echo: Served, http: httpx2.AsyncClient, era: str
) -> None:
    raw = await Raw(http, echo.url, era).open()
    with anyio.fail_after(30), answered(echo.gateway.metrics, HTTP, fast=1, sdk=1):
        plain = await raw.call("dual__slow", {"steps": 2}, id=21)
        progress = await raw.call("dual__slow", {"steps": 2}, id=22, meta={"progressToken": 22})

    # Handshake era: the SDK frames every answer as SSE, so a JSON body is the fast path's. Modern:
    # both answer a call without notifications in JSON; only the progress call must stream.
    assert kind(plain) == "json"
    assert messages(plain) == [answer(plain)]
    assert answer(plain)["result"]["structuredContent"] == {"result": "done 2"}
    assert kind(progress) == "sse"
    methods = [m.get("method") for m in messages(progress)]
    assert methods == ["notifications/progress", "notifications/progress", None]
    assert answer(progress)["result"]["structuredContent"] == {"result": "done 2"}


@ERAS
async def test_an_unknown_tool_is_the_sdks_invalid_params_error(
    echo: Served, http: httpx2.AsyncClient, era: str
) -> None:
    raw = await Raw(http, echo.url, era).open()
    with answered(echo.gateway.metrics, HTTP, fast=1, sdk=0):
        response = await raw.call("dual__nope", {}, id=31)

    error = error_of(response, 200 if era == "legacy" else 400)
    assert error["code"] == INVALID_PARAMS
    assert "dual__nope" in error["message"]


@ERAS
async def test_bad_arguments_are_an_error_result_naming_the_problem(
    echo: Served, http: httpx2.AsyncClient, era: str
) -> None:
    raw = await Raw(http, echo.url, era).open()
    with answered(echo.gateway.metrics, HTTP, fast=1, sdk=0):
        response = await raw.call("dual__echo", {"text": 3}, id=32)

    assert response.status_code == 200
    assert kind(response) == "json"
    result = answer(response)["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "dual__echo" in text
    assert 'text: 3 is not of type "string"' in text


async def test_an_unknown_or_ended_session_is_not_found(
    echo: Served, http: httpx2.AsyncClient
) -> None:
    unknown = Raw(http, echo.url, "legacy", session="0123456789abcdef0123456789abcdef")
    ended = await Raw(http, echo.url, "legacy").open()
    deleted = await http.delete(echo.url, headers=ended.headers("DELETE"))

    with answered(echo.gateway.metrics, HTTP, fast=0, sdk=2):
        assert (await unknown.call("dual__echo", {"text": "x"})).status_code == 404
        assert (await ended.call("dual__echo", {"text": "x"})).status_code == 404
    assert deleted.status_code == 200


async def test_a_mismatched_mcp_name_header_is_the_sdks_header_mismatch(
    echo: Served, http: httpx2.AsyncClient
) -> None:
    raw = Raw(http, echo.url, "modern")
    with answered(echo.gateway.metrics, HTTP, fast=0, sdk=1):
        response = await raw.call("dual__echo", {"text": "x"}, headers={"Mcp-Name": "dual__fail"})

    error = error_of(response, 400)
    assert error["code"] == HEADER_MISMATCH
    assert "mcp-name" in error["message"]


@ERAS
async def test_a_body_over_4_mib_is_refused(
    echo: Served, http: httpx2.AsyncClient, era: str
) -> None:
    raw = await Raw(http, echo.url, era).open()
    with answered(echo.gateway.metrics, HTTP, fast=0, sdk=1):
        response = await raw.call("dual__echo", {"text": "x" * (4 * 1024 * 1024 + 1)})

    assert response.status_code == 413


@ERAS
async def test_get_is_still_the_sdks(echo: Served, http: httpx2.AsyncClient, era: str) -> None:
    raw = await Raw(http, echo.url, era).open()
    headers = {"Accept": "text/event-stream", "MCP-Protocol-Version": raw.version}
    if raw.session is not None:
        headers["Mcp-Session-Id"] = raw.session
    with anyio.fail_after(30):
        async with http.stream("GET", echo.url, headers=headers) as response:
            status, framing = response.status_code, kind(response)

    assert status == (200 if era == "legacy" else 405)  # the session's standalone stream
    if era == "legacy":
        assert framing == "sse"


async def test_a_cancelled_notification_ends_a_legacy_call_on_the_fast_path(
    echo: Served, http: httpx2.AsyncClient
) -> None:
    raw = await Raw(http, echo.url, "legacy").open()
    responses: list[httpx2.Response] = []

    async def slow() -> None:
        responses.append(await raw.call("cancel-legacy__slow", {"steps": 1000}, id=41))

    with anyio.fail_after(30):
        async with echo.gateway.events.subscribe(["tool.*"]) as events:
            async with anyio.create_task_group() as tg:
                tg.start_soon(slow)
                await event_for(events, "tool.call", "cancel-legacy__slow")
                await raw.call("cancel-legacy__echo", {"text": "barrier"})  # upstream has it
                with answered(echo.gateway.metrics, HTTP, fast=1, sdk=0):
                    cancelled = await raw.notify("notifications/cancelled", {"requestId": 41})
            result = await event_for(events, "tool.result", "cancel-legacy__slow")
        noticed = await raw.call("cancel-legacy__wait_cancelled", {"timeout": 5})

    assert cancelled.status_code == 202
    [response] = responses
    assert response.status_code == 200
    assert messages(response) == []  # a cancelled request is never answered
    assert result.data["response"]["content"][0]["text"] == CANCELLED
    assert answer(noticed)["result"]["structuredContent"] == {"result": True}


async def test_closing_a_modern_request_cancels_the_upstream_call(
    echo: Served, http: httpx2.AsyncClient
) -> None:
    raw = Raw(http, echo.url, "modern")
    with anyio.fail_after(30):
        async with echo.gateway.events.subscribe(["tool.*"]) as events:
            async with anyio.create_task_group() as tg:
                tg.start_soon(raw.call, "cancel-modern__slow", {"steps": 1000})
                await event_for(events, "tool.call", "cancel-modern__slow")
                await raw.call("cancel-modern__echo", {"text": "barrier"})  # upstream has it
                tg.cancel_scope.cancel()  # closes the request's connection
            result = await event_for(events, "tool.result", "cancel-modern__slow")
        noticed = await raw.call("cancel-modern__wait_cancelled", {"timeout": 5})

    assert result.data["is_error"] is True
    assert result.data["response"]["content"][0]["text"] == CANCELLED
    assert answer(noticed)["result"]["structuredContent"] == {"result": True}


@pytest.mark.parametrize("mode", MODES)
async def test_a_call_the_policy_puts_to_the_caller_still_asks_the_caller(
    approvals: Served, mode: str
) -> None:
    value = marker("express-caller")
    asked: list[types.ElicitRequestParams] = []
    framing: dict[str, str] = {}

    async def record(response: httpx2.Response) -> None:
        body = json.loads(response.request.content or b"{}")
        if body.get("method") == "tools/call" and body.get("id") is not None:
            framing.setdefault(body["params"]["name"], kind(response))

    headers = {"Authorization": f"Bearer {AGENT_TOKEN}"}
    hooks = {"response": [record]}
    callback: Any = answering("accept", {"decision": "approve"}, asked=asked)
    with anyio.fail_after(30):
        async with (
            httpx2.AsyncClient(headers=headers, event_hooks=hooks, timeout=10) as http,
            Client(
                streamable_http_client(approvals.url, http_client=http),
                mode=mode,
                elicitation_callback=callback,
            ) as client,
        ):
            free = await client.call_tool("recorder__record_free", {"value": value})
            result = await client.call_tool("recorder__record_caller", {"value": value})

    assert not free.is_error, free
    assert not result.is_error, result
    assert result.content == [types.TextContent(type="text", text=f"recorded {value}")]
    assert len(asked) == 1
    if mode == "legacy":  # the session's plain call takes the fast path; the question needs the SDK
        assert framing == {"recorder__record_free": "json", "recorder__record_caller": "sse"}


async def test_a_session_answers_only_the_agent_that_opened_it(
    approvals: Served, http: httpx2.AsyncClient
) -> None:
    raw = await Raw(http, approvals.url, "legacy", token=AGENT_TOKEN).open()
    value = marker("express-owner")
    served: list[tuple[str, str, str]] = []
    refused: list[int] = []

    with (
        anyio.fail_after(30),
        answered(approvals.gateway.metrics, HTTP, fast=2, sdk=2),
    ):
        async with approvals.gateway.events.subscribe(["tool.call"]) as events:
            for token in (AGENT_TOKEN, OTHER_AGENT_TOKEN, OTHER_AGENT_TOKEN, AGENT_TOKEN):
                response = await raw.call("recorder__record_free", {"value": value}, token=token)
                if token == OTHER_AGENT_TOKEN:
                    refused.append(response.status_code)
                    continue
                assert "result" in answer(response), response.text
                event = await event_for(events, "tool.call", "recorder__record_free")
                served.append((kind(response), event.data["principal"], event.data["session_id"]))

    # Another agent's token on this session is told the session does not exist (as by the SDK
    # for an unknown session), on the fast path and off it; the opener keeps its session.
    assert refused == [404, 404]
    assert served == [("json", AGENT, raw.session), ("json", AGENT, raw.session)]
