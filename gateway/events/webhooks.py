"""Signed webhooks: each configured URL gets matching events POSTed as CloudEvents.

Signing follows the Standard Webhooks convention: headers ``webhook-id`` (the event id, stable
across retries), ``webhook-timestamp`` (Unix seconds of the attempt) and ``webhook-signature``
(``v1,`` + base64 HMAC-SHA256 of ``"{id}.{timestamp}.{body}"``). A ``whsec_``-prefixed secret is
base64-decoded to get the key, as those libraries do; any other secret is used as UTF-8 bytes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import random
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Final, Protocol, Self

import anyio
import httpx2

from gateway.config.events import WebhookConfig
from gateway.config.urls import UnsafeURL
from gateway.events._tasks import ConsumerTasks
from gateway.events.bus import EventBus, Subscription
from gateway.events.model import Event
from gateway.events.slack import slack_body
from gateway.events.urlcheck import check_resolved

__all__ = ["FailureCounter", "WebhookSink", "sign"]

logger = logging.getLogger(__name__)

_RETRY_STATUSES: Final = frozenset({408, 425, 429})


def sign(key: bytes, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header value for one delivery attempt."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


class FailureCounter(Protocol):
    """Told about webhook trouble (`gateway.metrics.Metrics` fits)."""

    def webhook_failed(self, host: str) -> None: ...
    def webhook_retried(self, host: str) -> None: ...


class _Permanent(Exception):
    """A failure that retrying will not fix."""


class Claim(Protocol):
    """Whether this process delivers ``event`` to the webhook at ``url`` (replicas share the
    work: see `gateway.postgres.webhook_claims`)."""

    async def __call__(self, event: Event, url: str) -> bool: ...


class WebhookSink:
    """Delivers events to each configured webhook, one delivery task per webhook.

    Deliveries never block tool calls: each webhook reads its own bounded bus subscription and
    retries with exponential backoff and jitter. Failures are logged (without the secret) and
    counted on ``metrics``. On exit, deliveries in progress get ``drain_timeout`` seconds.

    Args:
        bus: Where events come from.
        configs: The webhooks.
        metrics: Told about retries and given-up events.
        drain_timeout: Seconds allowed on exit to deliver what is queued.
        claim: Asked before each delivery when replicas share the events (None: deliver all).
    """

    def __init__(
        self,
        bus: EventBus,
        configs: Sequence[WebhookConfig],
        *,
        metrics: FailureCounter | None = None,
        drain_timeout: float = 5.0,
        claim: Claim | None = None,
    ) -> None:
        self._configs = tuple(configs)
        self._metrics, self._claim = metrics, claim
        self._tasks = ConsumerTasks(bus, drain_timeout=drain_timeout)
        self._client = httpx2.AsyncClient(follow_redirects=False, trust_env=False)

    async def __aenter__(self) -> Self:
        await self._client.__aenter__()
        await self._tasks.__aenter__()
        for config in self._configs:
            consumer = _Delivery(config, self._client, self._metrics, self._claim).run
            name = f"webhook:{config.host}"
            await self._tasks.add(config.events, consumer, name=name, buffer=config.queue)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self._tasks.__aexit__(exc_type, exc, tb)
        finally:
            await self._client.__aexit__(exc_type, exc, tb)


class _Delivery:
    """Delivers one webhook's events in order."""

    def __init__(
        self,
        config: WebhookConfig,
        client: httpx2.AsyncClient,
        metrics: FailureCounter | None,
        claim: Claim | None,
    ) -> None:
        self.config, self.client, self.metrics, self.claim = config, client, metrics, claim
        self.key = config.key()

    async def run(self, subscription: Subscription) -> None:
        async for event in subscription:
            if self.claim is not None and not await self.claim(event, self.config.url):
                continue  # another replica delivers it
            if not await self.deliver(event):
                logger.error(
                    "webhook %s: gave up on event %s (%s)", self.config.host, event.id, event.type
                )
                if self.metrics is not None:
                    self.metrics.webhook_failed(self.config.host)

    async def deliver(self, event: Event) -> bool:
        """Try ``event`` until it is accepted or attempts run out; True when delivered."""
        for attempt in range(1, self.config.max_attempts + 1):
            try:
                await self.attempt(event)
                return True
            except _Permanent as exc:
                logger.warning("webhook %s: %s; not retrying", self.config.host, exc)
                return False
            except (httpx2.HTTPError, OSError) as exc:
                logger.warning(
                    "webhook %s: attempt %d for event %s failed: %s",
                    self.config.host,
                    attempt,
                    event.id,
                    exc,
                )
            if attempt < self.config.max_attempts:
                if self.metrics is not None:
                    self.metrics.webhook_retried(self.config.host)
                await anyio.sleep(self.delay(attempt))
        return False

    def delay(self, attempt: int) -> float:
        """Exponential backoff with jitter (between half and all of the capped delay)."""
        capped: float = min(self.config.backoff_max, self.config.backoff * 2.0 ** (attempt - 1))
        return capped * (0.5 + random.random() / 2)

    async def attempt(self, event: Event) -> None:
        try:
            await check_resolved(self.config.url, allow_private=self.config.allow_private)
        except UnsafeURL as exc:
            raise _Permanent(str(exc)) from None
        slack = self.config.format == "slack"
        body = slack_body(event, self.config.link) if slack else event.json_bytes
        timestamp = int(time.time())
        headers = {
            "Content-Type": "application/json" if slack else "application/cloudevents+json",
            "webhook-id": event.id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": sign(self.key, event.id, timestamp, body),
        }
        response = await self.client.post(
            self.config.url, content=body, headers=headers, timeout=self.config.timeout
        )
        status = response.status_code
        if status < 300:
            return
        if status >= 500 or status in _RETRY_STATUSES:
            raise httpx2.HTTPStatusError(
                f"HTTP {status}", request=response.request, response=response
            )
        raise _Permanent(f"HTTP {status}")
