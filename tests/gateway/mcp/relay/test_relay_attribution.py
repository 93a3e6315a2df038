"""An upstream's request reaches only the client whose call it belongs to: never another client.

A 2026-07-28 upstream asks inside its answer to the call, so each question belongs to exactly one
call, however many clients call at once. A 2025-11-25 upstream's request does not say which call
it is about: it is relayed while the calls in progress on that server are all one client's, and
refused otherwise. A 2026-07-28 client answers with the call re-sent carrying a single-use state.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from relay_support import FACES, Answers, Face, Served, open_client, text

from toolsets.upstream.client_requests import UpstreamRequests

MODERN_HTTP = Face("http", "auto")


@pytest.mark.parametrize(
    "upstream",
    [  # a 2025-11-25 server over HTTP asks on the call's own response stream
        pytest.param("modern", id="modern-upstream"),
        pytest.param("web", id="legacy-http-upstream"),
    ],
)
@pytest.mark.parametrize("face", FACES)
async def test_concurrent_clients_each_get_only_their_own_question(
    served: Served, face: Face, upstream: str
) -> None:
    release = anyio.Event()
    ada, bob = Answers(hold=release), Answers(name="Bob", hold=release)
    results: dict[str, str] = {}

    async def greet(answers: Answers, question: str) -> None:
        async with open_client(face, served.gateway, served.url, answers) as client:
            result = await client.call_tool(f"{upstream}__greet", {"question": question})
            results[answers.name] = text(result)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(greet, ada, "Question for Ada")
            tg.start_soon(greet, bob, "Question for Bob")
            await ada.asking.wait()
            await bob.asking.wait()  # both questions out at once, both calls in progress
            release.set()
    assert (ada.questions, bob.questions) == (["Question for Ada"], ["Question for Bob"])
    assert results == {"Ada": "hello Ada", "Bob": "hello Bob"}


@pytest.mark.parametrize("face", FACES)
async def test_a_handshake_upstream_question_is_refused_while_two_clients_call_it(
    served: Served, face: Face
) -> None:
    release = anyio.Event()
    ada, bob = Answers(hold=release), Answers(name="Bob")
    with anyio.fail_after(30):
        async with (
            open_client(face, served.gateway, served.url, ada) as first,
            open_client(face, served.gateway, served.url, bob) as second,
            anyio.create_task_group() as tg,
        ):
            results: dict[str, types.CallToolResult] = {}

            async def call(client: Any, name: str) -> None:
                results[name] = await client.call_tool("legacy__greet", {"question": name})

            tg.start_soon(call, first, "for Ada")
            await ada.asking.wait()  # Ada's call is in progress, waiting for her answer
            await call(second, "for Bob")
            release.set()
    assert text(results["for Ada"]) == "hello Ada"
    assert results["for Bob"].is_error
    assert "calls of several clients to this server are in progress" in text(results["for Bob"])
    assert (ada.questions, bob.questions) == (["for Ada"], [])


async def test_a_request_with_no_call_in_progress_is_refused_naming_why() -> None:
    requests = UpstreamRequests("files", allowed=frozenset({"roots"}))
    answer = await requests.answer(types.ListRootsRequest())
    assert isinstance(answer, types.ErrorData)
    assert answer.message == (
        "lockgate did not relay 'roots/list' from server 'files': no call to this server is in "
        "progress, so there is no client to ask (lockgate relays such requests only to the "
        "client whose call is in progress)"
    )


async def _asked(client: Client, args: dict[str, Any]) -> types.InputRequiredResult:
    """``legacy__greet`` called over the 2026-07-28 era: the questions its upstream asks."""
    asked = await client.session.call_tool("legacy__greet", args, allow_input_required=True)
    assert isinstance(asked, types.InputRequiredResult)
    return asked


async def test_a_modern_client_answers_by_resending_the_call_and_the_state_is_single_use(
    served: Served,
) -> None:
    args = {"question": "Who?"}
    with anyio.fail_after(30):
        async with open_client(MODERN_HTTP, served.gateway, served.url, Answers()) as client:
            session = client.session
            asked = await _asked(client, args)
            [(key, question)] = (asked.input_requests or {}).items()
            assert isinstance(question, types.ElicitRequest)
            assert question.params.message == "Who?"
            answer = {key: types.ElicitResult(action="accept", content={"name": "Zed"})}
            state = asked.request_state
            done = await session.call_tool(
                "legacy__greet", args, input_responses=answer, request_state=state
            )
            with pytest.raises(MCPError, match="no call of yours to this tool waits"):
                await session.call_tool(
                    "legacy__greet", args, input_responses=answer, request_state=state
                )
    assert isinstance(done, types.CallToolResult)
    assert text(done) == "hello Zed"


async def test_a_modern_client_resending_the_call_without_its_answer_refuses_the_upstream(
    served: Served,
) -> None:
    args = {"question": "Who?"}
    with anyio.fail_after(30):
        async with open_client(MODERN_HTTP, served.gateway, served.url, Answers()) as client:
            session = client.session
            asked = await _asked(client, args)
            done = await session.call_tool(
                "legacy__greet", args, input_responses={}, request_state=asked.request_state
            )
    assert isinstance(done, types.CallToolResult)
    assert done.is_error
    assert "the client re-sent the call without answering this request" in text(done)
