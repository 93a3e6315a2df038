"""``events``: the event bus's ring, the audit log, the signed webhooks, and `EventFilter`, the
events a subscriber's credential lets its stream carry (see `gateway.api.event_scopes`)."""

from __future__ import annotations

import base64
import os
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from gateway.config._strict import Strict
from gateway.config.urls import check_static

__all__ = ["AuditConfig", "EventFilter", "EventsConfig", "WebhookConfig"]


class EventFilter(BaseModel):
    """What a subscriber's stream carries; each list holds globs, unset means everything."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    types: list[str] | None = Field(None, description="Event types, e.g. 'tool.approval.*'.")
    principals: list[str] | None = Field(None, description="Calling principals, e.g. 'agent:*'.")
    servers: list[str] | None = Field(None, description="Server names.")
    tools: list[str] | None = Field(None, description="Exposed tool names.")


class WebhookConfig(BaseModel):
    """One webhook in the gateway config.

    Attributes:
        url: Where to POST (http or https). Private, loopback, link-local and metadata addresses
            are refused unless ``allow_private``; redirects are not followed.
        events: Event type patterns to deliver (``tool.*``).
        secret: Signing secret, or ``env:NAME`` to read it from the environment.
        allow_private: Allow non-public destination addresses.
        max_attempts: Tries per event before it is given up (and counted as failed).
        timeout: Seconds per attempt.
        backoff: Seconds before the first retry; doubles each retry, with jitter.
        backoff_max: Longest wait between retries.
        queue: Events held for this webhook while it is slow; beyond, they are dropped and a
            ``lockgate.gap`` event is delivered in their place.
        format: ``cloudevents`` (the event as it is) or ``slack`` (``{"text": ...}`` for a
            Slack-compatible incoming webhook; see `gateway.events.slack`). Signed alike.
        link: The gateway's base URL as approvers reach it: a held call's message links to its
            card on the approvals page.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    events: list[str] = Field(default_factory=lambda: ["*"], min_length=1)
    secret: SecretStr
    allow_private: bool = False
    max_attempts: Annotated[int, Field(ge=1, le=100)] = 8
    timeout: Annotated[float, Field(gt=0)] = 10.0
    backoff: Annotated[float, Field(ge=0)] = 1.0
    backoff_max: Annotated[float, Field(ge=0)] = 300.0
    queue: Annotated[int, Field(ge=1)] = 1024
    format: Literal["cloudevents", "slack"] = "cloudevents"
    link: str | None = None

    @field_validator("secret", mode="before")
    @classmethod
    def _secret_from_env(cls, value: Any) -> Any:
        if isinstance(value, str) and value.startswith("env:"):
            name = value[4:]
            if not os.environ.get(name):
                raise ValueError(f"environment variable {name!r} is not set")
            return os.environ[name]
        return value

    @model_validator(mode="after")
    def _safe_url(self) -> Self:
        check_static(self.url, allow_private=self.allow_private)
        return self

    @property
    def host(self) -> str:
        """The URL's host, as used in metrics and logs (never the path or query)."""
        return urlsplit(self.url).hostname or ""

    def key(self) -> bytes:
        """The HMAC key."""
        secret = self.secret.get_secret_value()
        if secret.startswith("whsec_"):
            return base64.b64decode(secret.removeprefix("whsec_"))
        return secret.encode()


class AuditConfig(Strict):
    """The hash-chained audit log (SQLite)."""

    enabled: bool = True
    path: str = "var/audit.db"


class EventsConfig(Strict):
    """The event bus and its sinks."""

    ring_size: int = Field(1024, ge=16, description="Events kept for Last-Event-ID replay.")
    audit: AuditConfig = AuditConfig()
    webhooks: list[WebhookConfig] = Field(default_factory=list)
