"""The one error hierarchy of lockgate; mapped to JSON-RPC, HTTP and exit codes in one place."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ApprovalConflict",
    "AuditUnavailable",
    "ConfigError",
    "ConfigIssue",
    "LockgateError",
    "PolicyError",
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


class AuditUnavailable(LockgateError):
    """The audit log cannot be written: nothing that must be on record first may happen."""


class ApprovalConflict(LockgateError):
    """A pending call was already decided (or is in a state that forbids this transition)."""
