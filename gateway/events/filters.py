"""`EventFilter`: which events a subscriber's credential lets its stream carry (see
`gateway.api.event_scopes`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["EventFilter"]


class EventFilter(BaseModel):
    """What a subscriber's stream carries; each list holds globs, unset means everything."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    types: list[str] | None = Field(None, description="Event types, e.g. 'tool.approval.*'.")
    principals: list[str] | None = Field(None, description="Calling principals, e.g. 'agent:*'.")
    servers: list[str] | None = Field(None, description="Server names.")
    tools: list[str] | None = Field(None, description="Exposed tool names.")
