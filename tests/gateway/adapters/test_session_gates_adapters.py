"""The agent adapters see a session's tool list change on their next listing: an OpenAI loop's
tool schemas (in process and over HTTP in both eras) and a LangChain toolkit's tools."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from adapter_support import BACKENDS, agent_of, token_of
from support import echo_upstream, serve_asgi, write_config

from gateway.adapters.langchain import GatewayToolkit
from gateway.adapters.openai import InProcessGateway, RemoteGateway, chat_tools, run_tool_calls
from gateway.gateway import Gateway
from gateway.http.app import build_app

POLICY = """\
version: 1
defaults: {effect: allow}
rules:
  - id: weather-after-echo
    tools: [echo__weather]
    unlock_after: [echo__echo]
    effect: allow
"""
WEATHER = "echo__weather"


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[Gateway]:
    (tmp_path / "policy.yaml").write_text(POLICY, encoding="utf-8")
    config = write_config(
        tmp_path,
        [echo_upstream()],
        policies={"files": [str(tmp_path / "policy.yaml")]},
        approvals={"store": "memory"},
        auth={"agents": [{"id": agent_of(b).id, "token": token_of(b)} for b in BACKENDS]},
    )
    async with Gateway.from_config(config) as gw:
        yield gw


@contextlib.asynccontextmanager
async def _client(
    gateway: Gateway, backend: str
) -> AsyncIterator[InProcessGateway | RemoteGateway]:
    if backend == "inprocess":
        yield InProcessGateway(gateway=gateway, principal=agent_of(backend))
        return
    mode = "legacy" if backend == "http-legacy" else "auto"
    async with (
        serve_asgi(build_app(gateway, manage_gateway=False)) as base,
        RemoteGateway(base, token=token_of(backend), mode=mode) as remote,
    ):
        yield remote


@pytest.mark.parametrize("backend", BACKENDS)
async def test_openai_tool_schemas_follow_the_session(gateway: Gateway, backend: str) -> None:
    async with _client(gateway, backend) as client:
        before = {t["function"]["name"] for t in chat_tools(await client.list_tools())}
        read = {"id": "c1", "function": {"name": "echo__echo", "arguments": '{"text": "hi"}'}}
        outcome = await run_tool_calls(client, [read])
        after = {t["function"]["name"] for t in chat_tools(await client.list_tools())}
    assert outcome.messages[0]["content"] == "hi"
    assert WEATHER not in before
    assert after == before | {WEATHER}


async def test_a_langchain_toolkit_lists_the_unlocked_tool_next_time(gateway: Gateway) -> None:
    toolkit = GatewayToolkit.from_gateway(gateway, principal=agent_of("inprocess"))
    tools = {tool.name: tool for tool in await toolkit.aget_tools()}
    assert WEATHER not in tools
    await tools["echo__echo"].ainvoke({"text": "hi"})
    assert WEATHER in {tool.name for tool in await toolkit.aget_tools()}
