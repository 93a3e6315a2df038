"""The held calls of one ``ToolNode`` task ask in turn, and a reply reaches only its own call.

A plain ``ToolNode`` runs an AI message's calls side by side in one task, and LangGraph hands the
task's resume values to its ``interrupt()`` calls by their order in the task. Left alone, two held
calls race to ``interrupt()`` and a reviewer's reply may go to the other call than the one shown
(issue 30). Here the held calls of a task take turns in the AI message's tool-call order: each
asks once every call before it is done, and after one call paused the task, the ones after it
pause with that same interrupt (never a second request), so the request shown is the one the next
reply answers. Each request shown is remembered by its interrupt id (`SHOWN`); a call receiving
the reply to another call's request (a call before it was decided elsewhere meanwhile, so fewer
calls ask) does not apply it and asks again, and so does a reply naming another ``approval_id``.
LangGraph re-runs the whole node on each resume; a call that finished in an earlier run of its
task answers with that outcome (`OUTCOMES`, in this process) instead of calling the gateway again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import anyio

from gateway.adapters._langgraph_compat import GraphInterrupt, TaskView, slot_id
from toolsets.result import ToolResult

__all__ = ["ARRIVAL_S", "SHOWN", "Turn", "misdirected"]

ARRIVAL_S = 30.0
"""How long a call waits for an earlier call of its message to start (one the node never runs,
such as a tool missing from the ``ToolNode``, is then taken as done)."""

SHOWN: OrderedDict[str, str] = OrderedDict()
"""The approval id of each request shown, by the id of the interrupt carrying it (bounded)."""
_SHOWN_MAX = 4096

OUTCOMES: OrderedDict[tuple[str, str], ToolResult] = OrderedDict()
"""The outcome of each ordered call, by its task's namespace and its tool call id (bounded)."""


class _Gate:
    """The turns of one run of one task (the task's scratchpad is the key)."""

    def __init__(self, task: TaskView) -> None:
        self.task = task
        self.arrived = {c: anyio.Event() for c in task.call_ids}
        self.done = {c: anyio.Event() for c in task.call_ids}
        self.answered = 0  # replies handed out through the gate in this run
        self.raised: GraphInterrupt | None = None


_GATES: dict[int, _Gate] = {}


class Turn:
    """One call's turn in its task (a no-op for a call outside an ordered ``ToolNode`` task)."""

    def __init__(self, task: TaskView | None, call_id: str | None) -> None:
        gate = None
        if task is not None and call_id is not None and call_id in task.call_ids:
            gate = _GATES.setdefault(id(task.scratchpad), _Gate(task))
            gate.arrived[call_id].set()
        self._gate, self._call_id = gate, call_id or ""

    async def wait(self) -> None:
        """Wait until every call before this one in the AI message is done asking."""
        gate = self._gate
        if gate is None:
            return
        for earlier in gate.task.call_ids[: gate.task.call_ids.index(self._call_id)]:
            with anyio.move_on_after(ARRIVAL_S):
                await gate.arrived[earlier].wait()
            if gate.arrived[earlier].is_set():
                await gate.done[earlier].wait()

    def ask(
        self, ask: Callable[[dict[str, Any]], Any], request: dict[str, Any]
    ) -> tuple[Any, str | None]:
        """``ask(request)``; returns the reply and the approval id of the request it answered
        (None when unknown)."""
        gate, approval_id = self._gate, request.get("lockgate", {}).get("approval_id", "")
        if gate is None:
            return ask(request), None
        if gate.raised is not None:  # an earlier call paused the task: pause with its request
            raise gate.raised
        slot = gate.answered
        try:
            value = ask(request)
        except GraphInterrupt as exc:
            gate.raised = exc
            for paused in exc.args[0] if exc.args else ():
                SHOWN[paused.id] = approval_id
            while len(SHOWN) > _SHOWN_MAX:
                SHOWN.popitem(last=False)
            raise
        gate.answered += 1
        return value, SHOWN.get(slot_id(gate.task.ns, slot))

    def recalled(self) -> ToolResult | None:
        """This call's outcome from an earlier run of its task, if any."""
        gate = self._gate
        return None if gate is None else OUTCOMES.get((gate.task.ns, self._call_id))

    def remember(self, result: ToolResult) -> ToolResult:
        """Keep ``result`` as this call's outcome for the task's later runs; returns it."""
        if self._gate is not None:
            OUTCOMES[(self._gate.task.ns, self._call_id)] = result
            while len(OUTCOMES) > _SHOWN_MAX:
                OUTCOMES.popitem(last=False)
        return result

    def finish(self) -> None:
        """This call is done asking (the calls after it may ask)."""
        gate = self._gate
        if gate is None:
            return
        gate.done[self._call_id].set()
        if all(event.is_set() for event in gate.done.values()):
            _GATES.pop(id(gate.task.scratchpad), None)


def misdirected(reply: Any, answered: str | None, approval_id: str) -> str | None:
    """Why ``reply`` must not be applied to approval ``approval_id`` (None when it may be)."""
    named = reply.get("approval_id") if isinstance(reply, Mapping) else None
    meant = named if isinstance(named, str) else answered
    if meant is None or meant == approval_id:
        return None
    return (
        f"The last reply answered approval {meant}, not this call (approval {approval_id}); "
        "it was not applied. Reply to this request for this call."
    )
