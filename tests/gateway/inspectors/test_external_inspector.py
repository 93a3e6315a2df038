"""An external inspector on 127.0.0.1 (the documented JSON contract, served by uvicorn) in
front of the recording upstream, over HTTP in both MCP eras: its findings redact, its verdicts
are cached by content, and when it is slow or down the call goes as ``on_error`` says, within
the inspector's ``timeout``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from gateway_faces import HTTP_FACES, Face, text_of
from inspector_support import Inspector, gateway_client, of_type, received, recorder_config
from support import free_port

pytestmark = pytest.mark.parametrize("face", HTTP_FACES)

TIMEOUT = 0.5
"""The slow inspector's timeout (it never answers)."""
ANSWERS_WITHIN = 30.0
"""The timeout of an inspector that answers: a busy machine may take seconds to."""


def external(url: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "http",
        "url": url,
        "tools": ["rec__record"],
        "direction": "arguments",
        "timeout": ANSWERS_WITHIN,
        **extra,
    }


async def test_an_external_inspectors_spans_are_redacted_before_the_upstream_sees_them(
    tmp_path: Path, face: Face
) -> None:
    inspector = Inspector()
    async with inspector.serving() as url:
        config, log = recorder_config(tmp_path, {"ext": external(url)})
        async with gateway_client(config, face) as (client, _gateway, events):
            await client.call_tool("rec__record", {"value": "the swordfish flies"})
            (call,) = of_type(events, "tool.call")
    assert received(log)[0]["arguments"] == {"value": "the [REDACTED:secret-word] flies"}
    assert inspector.requests == [
        {
            "tool": "rec__record",
            "direction": "arguments",
            "content": "the swordfish flies",
            "principal": call["principal"],
        }
    ]
    assert call["decision"]["findings"][0] | {"where": "args.value"} == {
        "kind": "secret-word",
        "inspector": "ext",
        "direction": "arguments",
        "where": "args.value",
        "start": 4,
        "end": 13,
        "action": "redact",
    }


async def test_a_cached_verdict_does_not_ask_the_external_inspector_twice(
    tmp_path: Path, face: Face
) -> None:
    inspector = Inspector()
    async with inspector.serving() as url:
        config, log = recorder_config(tmp_path, {"ext": external(url)})
        async with gateway_client(config, face) as (client, _gateway, _events):
            for value in ("same swordfish", "same swordfish", "other"):
                await client.call_tool("rec__record", {"value": value})
    assert [body["content"] for body in inspector.requests] == ["same swordfish", "other"]
    assert [entry["arguments"]["value"] for entry in received(log)] == [
        "same [REDACTED:secret-word]",
        "same [REDACTED:secret-word]",
        "other",
    ]


async def _timed(client: Any, tool: str, value: str) -> tuple[Any, float]:
    started = time.perf_counter()
    result = await client.call_tool(tool, {"value": value})
    return result, time.perf_counter() - started


@pytest.mark.serial
@pytest.mark.parametrize("on_error", ["fail_closed", "fail_open"])
async def test_a_slow_inspector_is_cut_off_at_its_timeout_and_the_call_goes_as_on_error_says(
    tmp_path: Path, face: Face, on_error: str
) -> None:
    inspector = Inspector(slow=True)
    async with inspector.serving() as url:
        slow = external(url, on_error=on_error, timeout=TIMEOUT)
        config, log = recorder_config(tmp_path, {"ext": slow})
        async with gateway_client(config, face) as (client, _gateway, _events):
            _, control = await _timed(client, "rec__record_free", "swordfish")  # not inspected
            result, took = await _timed(client, "rec__record", "swordfish")
    assert len(inspector.requests) == 1  # it was asked, and never answered in time
    assert TIMEOUT <= took < 2 * control + TIMEOUT + 2.0
    if on_error == "fail_closed":
        assert result.is_error
        assert "could not inspect the arguments (no answer within 0.5s)" in text_of(result)
        assert (result.meta or {})["lockgate/refusal"]["kind"] == "inspector"
        assert [entry["tool"] for entry in received(log)] == ["record_free"]
    else:
        assert text_of(result) == "recorded swordfish"  # passed uninspected


@pytest.mark.parametrize("on_error", ["fail_closed", "fail_open"])
async def test_an_inspector_that_is_down_fails_as_configured(
    tmp_path: Path, face: Face, on_error: str
) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}/inspect"
    config, log = recorder_config(tmp_path, {"ext": external(nowhere, on_error=on_error)})
    async with gateway_client(config, face) as (client, _gateway, events):
        result = await client.call_tool("rec__record", {"value": "swordfish"})
    if on_error == "fail_closed":
        assert result.is_error
        assert "inspector 'ext' could not inspect the arguments" in text_of(result)
        assert received(log) == []
        (denied,) = of_type(events, "tool.denied")
        assert denied["decision"]["findings"][0]["kind"] == "inspector-error"
    else:
        assert text_of(result) == "recorded swordfish"
        assert received(log)[0]["arguments"] == {"value": "swordfish"}
