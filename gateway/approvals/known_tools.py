"""`KnownTools`: the tools pending calls are about, as known now: the served catalogue, the
host functions reviewed through the gateway (the ``human_in_the_loop`` decorators), and which
are held back because their definition changed upstream."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from gateway.approvals.pending import PendingCall
from toolsets.tooldef import ToolDef

__all__ = ["Catalogue", "KnownTools", "Quarantine"]

Catalogue = Callable[[], Awaitable[dict[str, ToolDef]]]
"""The served catalogue, by exposed name."""

Quarantine = Callable[[str], bool]
"""Whether the tool of that exposed name is quarantined: its definition changed upstream and
waits for an approver (`gateway.pins.ToolPins.waits_for_review`)."""


class KnownTools:
    """Looks tools up by exposed name (their pins may differ from a held call's).

    Args:
        catalogue: The served catalogue.
        quarantine: Which tools the catalogue leaves out until a changed definition is
            accepted (default: none).
    """

    def __init__(self, catalogue: Catalogue, quarantine: Quarantine | None = None) -> None:
        self._catalogue = catalogue
        self._quarantine = quarantine
        self._reviewed: dict[str, ToolDef] = {}

    def register_reviewed(self, tool: ToolDef) -> None:
        """Know ``tool``, a host's own function reviewed through the gateway, so that edits of
        its calls are validated; its name is not a valid exposed tool name, so no gateway call
        can match its records."""
        self._reviewed[tool.name] = tool

    async def current(self, name: str) -> ToolDef | None:
        """The tool ``name`` as the catalogue has it now, or None."""
        return (await self._catalogue()).get(name) or self._reviewed.get(name)

    def quarantined(self, name: str) -> bool:
        """Whether ``name`` is left out of the catalogue because its changed definition waits
        for review."""
        return self._quarantine is not None and self._quarantine(name)

    async def of(self, call: PendingCall) -> ToolDef:
        """The tool of ``call`` for its events (as held, when the catalogue lacks it now)."""
        tool = await self.current(call.tool)
        if tool is None:
            tool = ToolDef(name=call.tool, server=call.server, upstream_name=call.upstream_tool)
        return tool
