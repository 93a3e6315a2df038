"""What a per-principal pool (`toolsets.upstream.per_principal.PerPrincipalToolset`) is given
and raises: its callers' secrets (`PrincipalSecrets`), the gate holding a call of a caller not
connected yet (`ConnectGate`), and the refusal of a request beyond tools from such a caller
(`NotConnected`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from toolsets.context import CallContext
from toolsets.errors import LockgateError
from toolsets.refusal import Refusal, Unblock
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["ConnectGate", "NotConnected", "PrincipalSecrets", "no_secret"]


class PrincipalSecrets(Protocol):
    """The secrets of one server's callers (the gateway's vault, bound to the server)."""

    async def secret(self, principal: str) -> str | None:
        """``principal``'s secret, or None when none is set."""
        ...

    async def principals(self) -> list[str]:
        """The principals with a secret set."""
        ...


class ConnectGate(Protocol):
    """Holds a call from a principal who has not connected yet (the gateway's
    `gateway.connect.ConnectGate`): the call waits for the connection like an approval."""

    async def required(
        self, server: str, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext
    ) -> ToolResult | str:
        """The answer to the call now (an error result carrying the connect link), or the
        id of its held record once the principal connected: the call then runs."""
        ...

    async def reissued(
        self, server: str, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext
    ) -> str | None:
        """The id of the held record a (connected) caller's call re-issues, claimed to run
        once; None when there is none."""
        ...

    async def finished(self, held: str, result: ToolResult) -> None:
        """Record the outcome of the held call ``held``."""
        ...

    async def failed(self, held: str, error: BaseException) -> None:
        """Record that the held call ``held`` raised ``error`` (it ends ``failed``)."""
        ...


class NotConnected(LockgateError):
    """A request beyond tools (a resource read, a prompt get) from a principal with no secret
    for the server: ``refusal`` is the ``not_connected`` refusal a call of theirs gets."""

    def __init__(self, refusal: Refusal) -> None:
        self.refusal = refusal
        super().__init__(refusal.message)


def no_secret(server: str) -> Refusal:
    """The refusal of a request to ``server`` from a principal with no secret set for it."""
    path = f"/api/connections/{server}"
    return Refusal(
        kind="not_connected",
        message=(
            f"{server!r} is reached with each caller's own credentials and you have none "
            f"set: run `lockgate connections set {server}` (or PUT {path}), then call again"
        ),
        unblock=Unblock(action="connect", url=path),
        details={"server": server},
    )
