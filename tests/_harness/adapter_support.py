"""Constants and helpers of the adapter suite (imported as ``adapter_support``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from paths import TESTS
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolsets.context import Principal

POLICY = TESTS / "gateway" / "adapters" / "fixtures" / "policy.yaml"
OPS = Principal(id="user:ops", roles=frozenset({"ops"}))
OPS_TOKEN = "ops-token"
BACKENDS = ["inprocess", "http-legacy", "http-modern"]
"""Every backend calls as an agent of its own, so held calls never match across backends."""


def agent_of(backend: str) -> Principal:
    """The agent principal a backend calls as."""
    return Principal(id=f"agent:{backend}")


def token_of(backend: str) -> str:
    """The agent token of a remote backend."""
    return f"token-{backend}"


LOOKUP = {
    "name": "lookup",
    "description": "Look a word up in the worker's dictionary.",
    "input_schema": {
        "type": "object",
        "properties": {"word": {"type": "string"}},
        "required": ["word"],
    },
}


def tool_returns(messages: Sequence[ModelMessage]) -> list[ToolReturnPart]:
    """Every tool return in a conversation, in order."""
    return [
        part for message in messages for part in message.parts if isinstance(part, ToolReturnPart)
    ]


def scripted(*calls: tuple[str, dict[str, Any]]) -> FunctionModel:
    """A model that makes ``calls`` in its first turn, then reports every tool return as text.

    Call ids are ``c0``, ``c1``... in order. The final text has one line per return:
    ``{id} {outcome}: {content}``.
    """

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = tool_returns(messages)
        if not returns:
            parts = [
                ToolCallPart(name, args, tool_call_id=f"c{i}")
                for i, (name, args) in enumerate(calls)
            ]
            return ModelResponse(parts=list(parts))
        lines = [f"{r.tool_call_id} {r.outcome}: {r.content}" for r in returns]
        return ModelResponse(parts=[TextPart("\n".join(lines))])

    return FunctionModel(respond)


def lines_by_call(text: str) -> dict[str, str]:
    """The scripted model's final text, by call id."""
    return dict(line.split(" ", 1) for line in text.splitlines())
