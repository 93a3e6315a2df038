"""`ToolContext`: what a local function tool may ask to receive about the call it serves."""

from __future__ import annotations

from dataclasses import dataclass

from toolsets.context import ANONYMOUS, CallContext, Principal, ProgressCallback, new_call_id

__all__ = ["ToolContext"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """The context injected into a function tool that declares a parameter of this type.

    The parameter never appears in the tool's input schema; the model cannot set it.

    Attributes:
        principal: The caller.
        session_id: The downstream session, when there is one.
        call_id: Unique id of this call, as carried by events and pending calls.
        session: The session state object the gateway keeps for ``session_id`` (``None`` when the
            gateway keeps none). Its type belongs to the gateway; tools treat it as opaque unless
            they know it.
        progress: Where progress goes, when the client asked for it.
    """

    principal: Principal = ANONYMOUS
    session_id: str | None = None
    call_id: str = ""
    session: object | None = None
    progress: ProgressCallback | None = None

    def __post_init__(self) -> None:
        if not self.call_id:
            object.__setattr__(self, "call_id", new_call_id())

    @classmethod
    def from_call(cls, ctx: CallContext, session: object | None = None) -> ToolContext:
        """The tool context of the call described by ``ctx``.

        Args:
            ctx: The context the toolset received.
            session: The session state object to hand to the tool.
        """
        return cls(
            principal=ctx.principal,
            session_id=ctx.session_id,
            call_id=ctx.call_id,
            session=session,
            progress=ctx.progress,
        )

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send progress to the client; does nothing when the client did not ask for it.

        A sync tool (running in a worker thread) calls it through
        ``anyio.from_thread.run(ctx.report_progress, progress)``.

        Args:
            progress: Progress so far; increases with each call.
            total: The value ``progress`` reaches when done, when known.
            message: A short human-readable status.
        """
        if self.progress is not None:
            await self.progress(progress, total, message)
