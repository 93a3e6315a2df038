"""Local tools served by the adapter tests' gateway (``transport: python``).

They run in the test's own event loop, so a test sees exactly how often the gateway executed
them (`EXECUTED`) and can prove calls overlap (`rendezvous`).
"""

from __future__ import annotations

import anyio

EXECUTED: list[str] = []
"""Texts passed to `record` and `note`, one entry per execution."""


class _Meeting:
    def __init__(self) -> None:
        self.arrived = 0
        self.everyone = anyio.Event()


_MEETINGS: dict[str, _Meeting] = {}


def reset() -> None:
    """Forget executions and meetings (called before each test)."""
    EXECUTED.clear()
    _MEETINGS.clear()


def record(text: str) -> str:
    """Record a text.

    Args:
        text: What to record.
    """
    EXECUTED.append(text)
    return f"recorded {text}"


def note(text: str) -> str:
    """Keep a note.

    Args:
        text: The note.
    """
    EXECUTED.append(text)
    return f"noted {text}"


async def rendezvous(meeting: str, parties: int) -> str:
    """Return once ``parties`` calls of the same meeting are running at the same time.

    Args:
        meeting: The meeting's name.
        parties: How many calls must be inside at once.
    """
    found = _MEETINGS.setdefault(meeting, _Meeting())
    found.arrived += 1
    if found.arrived >= parties:
        found.everyone.set()
    with anyio.fail_after(30):
        await found.everyone.wait()
    return f"{meeting}: met {parties}"
