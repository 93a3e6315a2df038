"""Webhooks against a real local receiver: signatures, retries, give-up, URL safety, redaction."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

from gateway.config.events import WebhookConfig
from gateway.config.urls import UnsafeURL
from gateway.events import MASK, Event, EventBus
from gateway.events.slack import slack_body
from gateway.events.tool_events import SimpleDecision, approval_requested, tool_call
from gateway.events.urlcheck import check_resolved
from gateway.events.webhooks import WebhookSink
from gateway.metrics import Metrics
from toolsets import CallContext, Principal, ToolDef
from toolsets.context import ClientInfo

Server = Callable[[ASGIApp], AbstractAsyncContextManager[str]]
KEY = b"0123456789abcdef0123456789abcdef"
SECRET = "whsec_" + base64.b64encode(KEY).decode()


@dataclass
class Receiver:
    """Fails the first ``failures`` requests with ``status``, then accepts; checks signatures."""

    failures: int = 0
    status: int = 500
    expected: int = 1
    attempts: list[dict[str, Any]] = field(default_factory=list)
    accepted: list[dict[str, Any]] = field(default_factory=list)
    done: anyio.Event = field(default_factory=anyio.Event)

    async def hook(self, request: Request) -> Response:
        body = await request.body()
        msg_id, ts = request.headers["webhook-id"], request.headers["webhook-timestamp"]
        mac = hmac.new(KEY, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
        signed = request.headers["webhook-signature"] == "v1," + base64.b64encode(mac).decode()
        attempt = {"id": msg_id, "signed": signed, "type": request.headers["content-type"]}
        self.attempts.append(attempt | {"body": json.loads(body)})
        if len(self.attempts) <= self.failures:
            response = Response(status_code=self.status)
        else:
            self.accepted.append(json.loads(body))
            response = Response(status_code=204)
        if (
            len(self.accepted) >= self.expected
            or len(self.attempts) >= self.expected + self.failures
        ):
            self.done.set()
        return response

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/hook", self.hook, methods=["POST"])])


def config(base: str, **overrides: Any) -> WebhookConfig:
    values: dict[str, Any] = {
        "url": f"{base}/hook",
        "events": ["tool.*"],
        "secret": SECRET,
        "allow_private": True,
        "backoff": 0.001,
        "max_attempts": 4,
    }
    return WebhookConfig.model_validate(values | overrides)


async def test_receiver_sees_signed_retries_until_it_accepts(http_server: Server) -> None:
    receiver = Receiver(failures=2)
    bus, metrics = EventBus("urn:lockgate:gw"), Metrics()
    with anyio.fail_after(10):
        async with (
            http_server(receiver.app()) as base,
            WebhookSink(bus, [config(base)], metrics=metrics),
        ):
            sent = bus.publish(Event(type="tool.call", data={"tool": "files__read"}))
            bus.publish(Event(type="upstream.status", data={}))  # not subscribed
            await receiver.done.wait()
    assert [a["id"] for a in receiver.attempts] == [sent.id] * 3
    assert all(a["signed"] for a in receiver.attempts)
    assert {a["type"] for a in receiver.attempts} == {"application/cloudevents+json"}
    assert receiver.accepted == [json.loads(sent.json_bytes)]
    assert (
        metrics.registry.get_sample_value(
            "lockgate_webhook_retries_total", {"url_host": "127.0.0.1"}
        )
        == 2
    )


async def test_an_event_is_given_up_after_max_attempts_and_counted(http_server: Server) -> None:
    receiver = Receiver(failures=100, expected=0)
    bus, metrics = EventBus("gw"), Metrics()
    with anyio.fail_after(10):
        async with (
            http_server(receiver.app()) as base,
            WebhookSink(bus, [config(base, max_attempts=3)], metrics=metrics),
        ):
            bus.publish(Event(type="tool.result", data={}))
            await receiver.done.wait()
    assert len(receiver.attempts) == 3
    assert (
        metrics.registry.get_sample_value(
            "lockgate_webhook_failures_total", {"url_host": "127.0.0.1"}
        )
        == 1
    )


async def test_a_client_error_is_not_retried(http_server: Server) -> None:
    receiver = Receiver(failures=1, status=410, expected=1)
    bus, metrics = EventBus("gw"), Metrics()
    with anyio.fail_after(10):
        async with (
            http_server(receiver.app()) as base,
            WebhookSink(bus, [config(base)], metrics=metrics),
        ):
            bus.publish(Event(type="tool.call", data={"n": 1}))
            bus.publish(Event(type="tool.call", data={"n": 2}))
            await receiver.done.wait()
    assert [a["body"]["data"]["n"] for a in receiver.attempts] == [1, 2]
    assert (
        metrics.registry.get_sample_value(
            "lockgate_webhook_failures_total", {"url_host": "127.0.0.1"}
        )
        == 1
    )


async def test_delivered_bodies_are_redacted(http_server: Server) -> None:
    receiver = Receiver()
    bus = EventBus("gw")
    tool = ToolDef(name="http__get", server="http", upstream_name="get")
    args = {"url": "https://x.test", "token": "s3cr3t-value", "auth": "Bearer abcdefghijklmnop"}
    decision = SimpleDecision("allow", "web", ("args.token",))
    with anyio.fail_after(10):
        async with (
            http_server(receiver.app()) as base,
            WebhookSink(bus, [config(base)]),
        ):
            bus.publish(tool_call(tool, CallContext(), args, decision))
            await receiver.done.wait()
    delivered = receiver.accepted[0]["data"]["args"]
    assert delivered == {"url": "https://x.test", "token": MASK, "auth": f"Bearer {MASK}"}


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("http://127.0.0.1:9000/hook", id="loopback"),
        pytest.param("http://localhost:9000/hook", id="localhost"),
        pytest.param("http://10.1.2.3/hook", id="rfc1918-10"),
        pytest.param("http://172.16.0.1/hook", id="rfc1918-172"),
        pytest.param("http://192.168.1.10/hook", id="rfc1918-192"),
        pytest.param("http://169.254.169.254/latest/meta-data", id="metadata"),
        pytest.param("http://100.100.100.200/hook", id="cgnat-metadata"),
        pytest.param("http://[::1]/hook", id="ipv6-loopback"),
        pytest.param("http://[fe80::1]/hook", id="ipv6-link-local"),
        pytest.param("http://[fd00:ec2::254]/hook", id="ipv6-unique-local"),
        pytest.param("http://[::ffff:10.0.0.1]/hook", id="ipv4-mapped"),
        pytest.param("ftp://example.com/hook", id="not-http"),
    ],
)
def test_private_urls_are_refused_without_allow_private(url: str) -> None:
    with pytest.raises(ValidationError):
        WebhookConfig(url=url, secret="s")


def test_public_urls_and_explicitly_allowed_private_ones_are_accepted() -> None:
    assert WebhookConfig(url="https://hooks.example.com/x", secret="s").host == "hooks.example.com"
    allowed = WebhookConfig(url="http://10.0.0.5/x", secret="s", allow_private=True)
    assert allowed.allow_private


async def test_names_resolving_to_private_addresses_are_refused_at_delivery() -> None:
    # 2130706433 is 127.0.0.1 written as one number: not an IP literal, but it resolves to one.
    url = "http://2130706433/hook"
    WebhookConfig(url=url, secret="s")
    with pytest.raises(UnsafeURL):
        await check_resolved(url, allow_private=False)


def test_secret_can_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOK_SECRET", "from-env")
    hook = WebhookConfig(url="https://h.example/x", secret="env:HOOK_SECRET")
    assert hook.key() == b"from-env"
    assert "from-env" not in repr(hook)
    monkeypatch.delenv("HOOK_SECRET")
    with pytest.raises(ValidationError, match="HOOK_SECRET"):
        WebhookConfig(url="https://h.example/x", secret="env:HOOK_SECRET")


async def test_a_slack_format_webhook_gets_a_readable_signed_message_linking_the_card(
    http_server: Server,
) -> None:
    receiver = Receiver()
    tool = ToolDef(name="files__write_file", server="files")
    held = approval_requested(
        tool,
        CallContext(principal=Principal(id="agent:<b>")),
        {"path": ".env"},
        SimpleDecision("ask", "sensitive-writes"),
        approval_id="ap_123",
        reason="writes to a secrets file",
    )
    bus = EventBus("test")
    async with http_server(receiver.app()) as base:
        hook = config(
            base, format="slack", link="https://gw.example.com/", events=["tool.approval.*"]
        )
        async with WebhookSink(bus, [hook]):
            bus.publish(held)
            with anyio.fail_after(10):
                await receiver.done.wait()
    (attempt,) = receiver.attempts
    assert attempt["signed"]
    assert attempt["type"] == "application/json"
    text = attempt["body"]["text"]
    assert text.startswith("*Held for approval:* `files__write_file` for `agent:&lt;b&gt;`")
    assert "(rule `sensitive-writes`): writes to a secrets file." in text
    assert "<https://gw.example.com/approvals#ap_123|Open the card>" in text
    assert text.endswith("`lockgate approvals approve ap_123`")


def test_a_slack_message_tells_what_the_tool_does_its_claims_flags_and_the_client() -> None:
    tool = ToolDef(
        name="files__delete",
        server="files",
        description="Delete a file. <b>Irreversible</b>.",
        annotations={"destructiveHint": True, "title": "Delete"},
        flags=("sensitive-path",),
    )
    client = ClientInfo(name="claude-code", version="2.1", transport="http")
    held = approval_requested(
        tool,
        CallContext(principal=Principal(id="agent:a"), client=client),
        {"path": "/srv/x"},
        SimpleDecision("ask", "deletes"),
        approval_id="ap_9",
        reason="deleting",
    )

    text = json.loads(slack_body(held, None))["text"]

    assert held.data["tool_context"]["hints"] == {"destructiveHint": True}
    lines = text.split("\n")[1:]
    assert lines == [
        "> Delete a file. &lt;b&gt;Irreversible&lt;/b&gt;.",
        "Hints (the server's own claims): destructiveHint=True",
        "*Flags:* sensitive-path",
        "Client: claude-code 2.1",
    ]
