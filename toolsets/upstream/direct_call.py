"""`DirectCall`: a ``tools/call`` straight down a stdio upstream's pipe (see `StdioPipe`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolsets.errors import UpstreamError
from toolsets.result import ToolResult
from toolsets.upstream.client_requests import UpstreamRequests
from toolsets.upstream.convert import tool_result_from_wire
from toolsets.upstream.stdio_pipe import StdioPipe

__all__ = ["DirectCall"]


@dataclass(frozen=True, slots=True)
class DirectCall:
    """``tools/call`` straight down a stdio pipe (no progress wanted, so no session needed)."""

    pipe: StdioPipe
    name: str
    args: Mapping[str, Any]
    meta: Mapping[str, object] | None

    async def run(self, server: str, requests: UpstreamRequests) -> ToolResult:
        """The result; a 2026-07-28 server's questions on the way are answered by the calling
        client (`UpstreamRequests.settle`).

        Raises:
            MCPError: the server answered with an error, or a question was not answered.
            UpstreamError: the result is malformed.
        """
        raw = await requests.settle(await self._send({}), self._send)
        try:
            return tool_result_from_wire(raw)
        except ValueError as exc:
            message = f"Server {server!r} sent a malformed result for {self.name!r}: {exc}"
            raise UpstreamError(message, server=server) from None

    async def _send(self, extra: Mapping[str, Any]) -> dict[str, Any]:
        params: dict[str, Any] = {"name": self.name, "arguments": self.args, **extra}
        if self.meta:
            params["_meta"] = dict(self.meta)
        return await self.pipe.request("tools/call", params)
