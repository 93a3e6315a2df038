"""An upstream's requests to the client (elicitation, sampling, roots) reach the client whose
call is in progress, if it declared the capability, and its answer reaches the upstream's tool;
otherwise the upstream is refused with an error naming the capability and the reason.

Both faces (HTTP, stdio) in both eras, against a 2025-11-25 upstream (which sends requests mid
call) and a 2026-07-28 upstream (which answers the call with ``InputRequiredResult``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from relay_support import (
    FACES,
    LEGACY_FACES,
    ROOT,
    SAMPLED,
    UPSTREAM_ERAS,
    Answers,
    Face,
    Served,
    open_client,
    relay_upstream,
    text,
)
from support import path_counts, write_config


@dataclass(frozen=True)
class Asking:
    """A relay server tool that asks the client, what it asks for and what it returns then."""

    tool: str
    args: dict[str, str]
    capability: str
    method: str
    returns: str


ASKING = [
    pytest.param(
        Asking("greet", {"question": "Who?"}, "elicitation", "elicitation/create", "hello Ada"),
        id="elicitation",
    ),
    pytest.param(
        Asking("complete", {"prompt": "6 x 7"}, "sampling", "sampling/createMessage", SAMPLED),
        id="sampling",
    ),
    pytest.param(Asking("roots", {}, "roots", "roots/list", ROOT), id="roots"),
]


@pytest.mark.parametrize("asking", ASKING)
@UPSTREAM_ERAS
@pytest.mark.parametrize("face", FACES)
async def test_the_upstream_asks_the_calling_client_and_its_tool_gets_the_answer(
    served: Served, face: Face, upstream: str, asking: Asking
) -> None:
    answers = Answers()
    with anyio.fail_after(30):
        async with open_client(face, served.gateway, served.url, answers) as client:
            result = await client.call_tool(f"{upstream}__{asking.tool}", asking.args)
    assert not result.is_error, text(result)
    assert text(result) == asking.returns
    asked = {
        "elicitation": answers.questions == ["Who?"],
        "sampling": answers.prompts == ["6 x 7"],
        "roots": answers.roots_asked == 1,
    }
    assert asked[asking.capability], answers


@pytest.mark.parametrize("asking", ASKING)
@UPSTREAM_ERAS
@pytest.mark.parametrize("face", FACES)
async def test_a_client_that_did_not_declare_the_capability_gets_a_clear_refusal_in_the_result(
    served: Served, face: Face, upstream: str, asking: Asking
) -> None:
    answers = Answers()
    with anyio.fail_after(30):
        async with open_client(face, served.gateway, served.url, answers, capable=False) as c:
            result = await c.call_tool(f"{upstream}__{asking.tool}", asking.args)
    assert result.is_error
    assert f"lockgate did not relay '{asking.method}' from server '{upstream}'" in text(result)
    reason = f"the calling client did not declare the {asking.capability} capability"
    assert reason in text(result)
    assert not answers.asking.is_set()  # never asked anything


@pytest.mark.parametrize("face", FACES)
async def test_a_server_not_enabled_for_sampling_has_it_refused_even_for_a_capable_client(
    served: Served, face: Face
) -> None:
    answers = Answers()
    with anyio.fail_after(30):
        async with open_client(face, served.gateway, served.url, answers) as client:
            refused = await client.call_tool("nosample__complete", {"prompt": "6 x 7"})
            asked = await client.call_tool("nosample__greet", {"question": "Who are you?"})
    assert refused.is_error
    assert "lockgate did not relay 'sampling/createMessage' from server 'nosample'" in text(refused)
    assert "sampling is not enabled for this server (client_requests in its config)" in text(
        refused
    )
    assert answers.prompts == []
    assert text(asked) == "hello Ada"  # the server's other requests are still relayed


@pytest.mark.parametrize("face", LEGACY_FACES)
async def test_a_handshake_client_is_asked_on_the_fast_path_which_answers_its_plain_calls(
    served: Served, face: Face
) -> None:
    metrics, transport = served.gateway.metrics, face.transport
    answers = Answers()
    with anyio.fail_after(30):
        async with open_client(face, served.gateway, served.url, answers) as client:
            await client.list_tools()  # the client lists before its first call (fast too)
            before = path_counts(metrics, transport)["fast"]
            result = await client.call_tool("legacy__greet", {"question": "Who?"})
            fast = path_counts(metrics, transport)["fast"] - before
    assert text(result) == "hello Ada"
    assert answers.questions == ["Who?"]
    assert fast == 2  # the call, and the client's answer to the question asked on its wire


async def test_lockgate_stdio_relays_a_question_over_its_real_pipes_if_the_server_may_ask(
    tmp_path: Path,
) -> None:
    enabled = relay_upstream("legacy", "legacy", client_requests=["elicitation"])
    config = write_config(tmp_path, [enabled, relay_upstream("closed", "legacy")])
    command = [sys.executable, "-m", "gateway.cli", "stdio", "--config", str(config)]
    server = StdioServerParameters(command=command[0], args=command[1:])
    answers = Answers()
    with anyio.fail_after(60):
        async with Client(server, mode="legacy", **answers.callbacks(True)) as client:
            result = await client.call_tool("legacy__greet", {"question": "Who?"})
            refused = await client.call_tool("closed__greet", {"question": "And you?"})
    assert text(result) == "hello Ada"
    assert answers.questions == ["Who?"]  # a server not enabled by default asks nobody
    assert "elicitation is not enabled for this server (client_requests in its config)" in text(
        refused
    )
