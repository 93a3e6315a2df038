"""A finished upstream task under ``pins.on_change``, and the release of a quarantined result.

When an upstream task completes, its tool is looked at as a direct call would see it now
(`ServedPins`): a changed definition that ``pins.on_change`` (or ``on_metadata_change``)
quarantines holds the result back: the task waits in ``input_required``, its status message
naming the pin review, its result kept undelivered; ``warn`` and ``accept`` serve the changed
tool, so the result is delivered. Once the review is over (`TaskReview.settle`): the definition
the task completed under was accepted, so its result goes through the result steps and the task
completes; the tool came back to its earlier definition instead, so the result is discarded and
the task fails saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from gateway.pins.guard import ToolPins
from gateway.tasks.follower import PIN_REVIEW, pin_refusal
from gateway.tasks.record import TaskRecord
from gateway.tasks.results import TaskResults
from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.upstream.server import MCPServerToolset

__all__ = ["PinState", "ServedPins", "TaskReview", "discarded_message"]


class PinState(Protocol):
    """Whether a task's tool waits for the pin review now, and its current pin."""

    async def __call__(self, record: TaskRecord) -> tuple[bool, str | None]: ...


class ServedPins:
    """A task's tool as a direct call sees it: reviewed against its pin (`ToolPins`) in the
    served catalogue's current version.

    Args:
        served: The served catalogue (`toolsets.pinned.PinnedToolset`).
        pins: The tool pins.
        upstreams: The upstream servers by name.
    """

    def __init__(
        self, served: Toolset, pins: ToolPins, upstreams: Mapping[str, MCPServerToolset]
    ) -> None:
        self._served = served
        self._pins = pins
        self._upstreams = upstreams

    async def __call__(self, record: TaskRecord) -> tuple[bool, str | None]:
        await self._served.get_tools(CallContext())  # reviews a catalogue not yet reviewed
        upstream = self._upstreams.get(record.upstream or "")
        name = record.upstream_tool
        current = upstream.tools.get(name) if upstream is not None and name else None
        return self._pins.waits_for_review(record.tool), current.pin if current else None


def discarded_message(tool: str) -> str:
    """Why a quarantined result was discarded."""
    return (
        f"Tool {tool!r} went back to its earlier definition without the changed one it ran "
        "under being accepted: lockgate discarded the quarantined result. Call the tool again."
    )


class TaskReview:
    """Ends finished upstream tasks (see the module docstring).

    Args:
        state: The pin state of a task's tool (None: no pins are checked).
        results: The result steps (None: results are delivered as the server sent them).
    """

    def __init__(self, state: PinState | None = None, results: TaskResults | None = None) -> None:
        self._state = state
        self._results = results

    async def complete(
        self, record: TaskRecord, raw: Mapping[str, Any], message: str | None
    ) -> TaskRecord:
        """``record``, whose server completed it with ``raw``: completed (or failed, a result
        that cannot be delivered), or quarantined for the pin review."""
        if self._state is not None:
            held, pin = await self._state(record)
            if held:
                text = pin_refusal(record.tool)
                error = {"code": PIN_REVIEW, "message": text}
                return record.moved(
                    "input_required", text, result=dict(raw), error=error, quarantined_pin=pin or ""
                )
        return await self._deliver(record, raw, message)

    async def settle(self, record: TaskRecord) -> TaskRecord | None:
        """The end of quarantined ``record`` once its review is over; None while it waits."""
        assert self._state is not None
        assert record.quarantined
        held, pin = await self._state(record)
        if held:
            return None
        if pin is not None and pin == record.quarantined_pin:  # the new definition accepted
            return await self._deliver(record, record.result or {"content": []}, None)
        text = discarded_message(record.tool)
        error = {"code": PIN_REVIEW, "message": text}
        return record.moved("failed", text, result=None, error=error)

    async def ended(self, record: TaskRecord) -> None:
        """Report the failure or cancellation of ``record``, an upstream's task, as its call's
        ``tool.result`` (`TaskResults.ended`; nothing without result steps)."""
        if self._results is not None:
            await self._results.ended(record)

    async def _deliver(
        self, record: TaskRecord, raw: Mapping[str, Any], message: str | None
    ) -> TaskRecord:
        record = record.moved(record.status, message, error=None)
        if self._results is None:
            return record.moved("completed", message, result=dict(raw))
        return await self._results.deliver(record, raw)
