"""What the LangChain adapter needs of LangGraph beyond its public API, in one place.

`in_graph` reads LangGraph's run configuration: ``interrupt()`` works only inside a node of a
graph run (it needs the run's scratchpad, under a private config key), and outside one the
adapter answers a held call as "pending" instead of pausing.

`current_task` and `slot_id` let the held calls of one ``ToolNode`` task ask in the AI message's
tool-call order and check which request a reply answered (`gateway.adapters._turn_order`): the
task's scratchpad (one per run of a task), its checkpoint namespace, the tool calls of the last
AI message (read through the task's private state reader) and the id LangGraph gives the
interrupt that fills a task's n-th answer (``langgraph.types._interrupt_id``).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage
from langgraph._internal._constants import (
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_READ,
    CONFIG_KEY_SCRATCHPAD,
)
from langgraph.config import get_config
from langgraph.errors import GraphInterrupt
from langgraph.types import _interrupt_id, interrupt

__all__ = ["GraphInterrupt", "TaskView", "current_task", "in_graph", "interrupt", "slot_id"]


def _configurable() -> dict[str, Any]:
    try:
        config: Any = get_config()
    except RuntimeError:  # not inside a runnable at all
        return {}
    return dict(config.get("configurable") or {})


def in_graph() -> bool:
    """True inside a node of a LangGraph run, where ``interrupt()`` can pause the graph."""
    return CONFIG_KEY_SCRATCHPAD in _configurable()


@dataclass(frozen=True, slots=True)
class TaskView:
    """The running task, as far as ordering its held calls needs.

    Attributes:
        scratchpad: The task's scratchpad (one object per run of the task).
        ns: The task's checkpoint namespace (what its interrupt ids are made of).
        call_ids: The ids of the last AI message's tool calls of the given tools, in order.
    """

    scratchpad: object
    ns: str
    call_ids: tuple[str, ...]


def current_task(names: Collection[str]) -> TaskView | None:
    """The running task and its AI message's calls of ``names``; None outside a graph or when
    the task's state has no ``messages`` with tool calls."""
    conf = _configurable()
    scratchpad, read = conf.get(CONFIG_KEY_SCRATCHPAD), conf.get(CONFIG_KEY_READ)
    if scratchpad is None or read is None:
        return None
    try:
        messages = read("messages")
    except Exception:  # a state without a messages channel: nothing to order
        return None
    last = next((m for m in reversed(messages or []) if isinstance(m, AIMessage)), None)
    if last is None:
        return None
    ids = tuple(str(c["id"]) for c in last.tool_calls if c["id"] and c["name"] in names)
    return TaskView(scratchpad, str(conf.get(CONFIG_KEY_CHECKPOINT_NS, "")), ids)


def slot_id(ns: str, answered: int) -> str:
    """The id of the interrupt a task raises when it holds ``answered`` answers already."""
    return _interrupt_id(ns, answered)
