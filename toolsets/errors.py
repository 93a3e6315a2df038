"""The one error hierarchy of lockgate: `LockgateError` and the errors of the toolsets layer.

Each concern that adds its own keeps them in one module (``policies/errors.py``,
``gateway/approvals/errors.py``, ...). Each face maps them outward once, in a table looked up along
the exception's MRO: ``gateway/mcp/errors.py`` (a tool error result or a JSON-RPC error),
``gateway/api/errors.py`` (an HTTP status) and ``gateway/cli/errors.py`` (an exit code).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolsets.result import ToolResult

__all__ = [
    "ApprovalConflict",
    "ArgumentsInvalid",
    "AuditUnavailable",
    "CallRefused",
    "ConfigError",
    "ConfigIssue",
    "ImportPathError",
    "LockgateError",
    "PolicyError",
    "PromptDenied",
    "PromptNotFound",
    "RelayRefused",
    "ResourceDenied",
    "ResourceNotFound",
    "StoreUnavailable",
    "ToolCollisionError",
    "ToolNotFoundError",
    "ToolQuarantined",
    "UpstreamError",
    "UpstreamRequestError",
]


class LockgateError(Exception):
    """Base class of every error lockgate raises on purpose."""


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """One problem in a configuration or policy file, located as precisely as known."""

    file: str
    line: int | None
    column: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        key = f" {self.key}:" if self.key else ""
        return f"{where}:{key} {self.message}"


class ConfigError(LockgateError):
    """A configuration file is invalid; carries every issue found, each with file, line and key."""

    def __init__(self, issues: list[ConfigIssue]) -> None:
        self.issues = tuple(issues)
        super().__init__("\n".join(str(i) for i in issues))


class PolicyError(ConfigError):
    """A policy file is invalid."""


class ToolNotFoundError(LockgateError):
    """No tool of that name is visible to the caller."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"Unknown tool: {name!r}")


class ToolQuarantined(LockgateError):
    """The tool's definition changed upstream and waits for an approver to accept it."""

    def __init__(self, name: str, fields: list[str]) -> None:
        self.name = name
        super().__init__(
            f"Tool {name!r} is not available: its definition changed upstream "
            f"({', '.join(fields)}) and waits for review by an approver."
        )


class ArgumentsInvalid(LockgateError):
    """Arguments do not match the tool's input schema; the message names each offending path."""


class ImportPathError(LockgateError, LookupError):
    """A ``package.module:function`` path names nothing usable as a tool.

    Attributes:
        path: The import path as written.
        reason: What went wrong.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"cannot import {path!r}: {reason}")


class ToolCollisionError(LockgateError):
    """Two toolsets expose the same name."""

    def __init__(self, name: str, first: str, second: str) -> None:
        self.name = name
        super().__init__(
            f"Tool name collision: {name!r} is exposed by both server {first!r} "
            f"and server {second!r}"
        )


class UpstreamError(LockgateError):
    """An upstream MCP server is unreachable, lost, too slow, or failed at the protocol level.

    The MCP face answers it as an error result the model reads (the call reached no tool).
    """

    def __init__(self, message: str, *, server: str = "") -> None:
        self.server = server
        super().__init__(message)


class UpstreamRequestError(UpstreamError):
    """The upstream answered the call with a JSON-RPC error; the MCP face relays it as one."""

    def __init__(self, message: str, *, server: str, code: int, data: object = None) -> None:
        super().__init__(message, server=server)
        self.code = code
        self.data = data


class RelayRefused(LockgateError):
    """An upstream's request to the client (elicitation, sampling, roots) is not relayed.

    The upstream is answered with a JSON-RPC error carrying this message; a 2026-07-28
    upstream's call ends in an error result naming it.
    """

    def __init__(self, server: str, method: str, reason: str) -> None:
        self.server = server
        self.method = method
        self.reason = reason
        source = f" from server {server!r}" if server else ""
        super().__init__(f"lockgate did not relay {method!r}{source}: {reason}")


class AuditUnavailable(LockgateError):
    """The audit log cannot be written: nothing that must be on record first may happen."""


class StoreUnavailable(LockgateError):
    """The shared store (PostgreSQL) cannot be reached: what needs it fails closed, naming it."""


class CallRefused(LockgateError):
    """A step below the policy decision refused the call (a rate limit); ``result`` is the
    error result the caller reads.

    `PolicyToolset` answers with ``result`` and, as for a deny, does not count the call in its
    session: it never ran.
    """

    def __init__(self, result: ToolResult) -> None:
        self.result = result
        super().__init__(result.first_text())


class ApprovalConflict(LockgateError):
    """A pending call was already decided (or is in a state that forbids this transition)."""


class ResourceNotFound(LockgateError):
    """No resource of that URI is visible to the caller (one the policy hides reads the same)."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        super().__init__(f"Unknown resource: {uri}")


class ResourceDenied(LockgateError):
    """A resource read was refused: by the policy (``message`` is the rule's), by an approver,
    or it waits for a decision (``data`` names the pending call then)."""

    def __init__(self, uri: str, message: str, *, data: Mapping[str, Any] | None = None) -> None:
        self.uri = uri
        self.data = dict(data or {})
        super().__init__(message)


class PromptNotFound(LockgateError):
    """No prompt of that name is visible to the caller (one the policy hides reads the same)."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"Unknown prompt: {name}")


class PromptDenied(LockgateError):
    """The policy refused a prompt get; the message is the rule's."""

    def __init__(self, name: str, message: str, *, data: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.data = dict(data or {})
        super().__init__(message)
