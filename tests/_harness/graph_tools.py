"""Local tools served by the LangGraph tests' gateway (``transport: python``).

They run in the test's own process, so a test sees exactly how often the gateway executed them
(`EXECUTED`).
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

EXECUTED: list[tuple[str, dict[str, object]]] = []
"""Each execution: the tool and its arguments."""


class Address(TypedDict):
    """Where a parcel goes."""

    street: str
    city: str


class Parcel(TypedDict):
    """A parcel to ship."""

    weight_kg: float
    to: Address


def reset() -> None:
    """Forget executions (called before each test)."""
    EXECUTED.clear()


def transfer(
    account: str, amount: int, currency: Literal["EUR", "USD"] = "EUR"
) -> dict[str, object]:
    """Transfer money to an account.

    Args:
        account: The receiving account.
        amount: How much, in whole units (at least 1).
        currency: The currency.
    """
    EXECUTED.append(("transfer", {"account": account, "amount": amount, "currency": currency}))
    return {"account": account, "amount": amount, "currency": currency, "status": "sent"}


def ship(parcel: Parcel, speed: Literal["standard", "express"]) -> str:
    """Ship a parcel.

    Args:
        parcel: What to ship, and where.
        speed: How fast.
    """
    EXECUTED.append(("ship", {"parcel": dict(parcel), "speed": speed}))
    return f"shipped {parcel['weight_kg']} kg to {parcel['to']['city']} ({speed})"


def note(text: str) -> str:
    """Note a line (allowed by the suite's policies: a call that is never held).

    Args:
        text: What to note.
    """
    EXECUTED.append(("note", {"text": text}))
    return text
