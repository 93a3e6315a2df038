"""The ``scopes`` key of a rule as the policy model validates it: OAuth scope tokens, on tool
rules without conditions (see `policies.scopes`)."""

from __future__ import annotations

from typing import Final

from pydantic import ValidationInfo
from pydantic_core import PydanticCustomError

__all__ = ["SCOPE_TOKEN", "check_scopes"]

SCOPE_TOKEN: Final = r"^[\x21\x23-\x5b\x5d-\x7e]+$"
"""An OAuth scope token (RFC 6749 3.3): printable ASCII but space, '"' and '\\'."""


def check_scopes(value: list[str] | None, info: ValidationInfo) -> list[str] | None:
    """A pydantic field validator of the rule model: ``scopes`` only on a tool rule without
    conditions (the HTTP edge decides it before the arguments are read)."""
    if value is None:
        return None
    data = info.data
    if data.get("resources") is not None or data.get("prompts") is not None:
        raise PydanticCustomError("scopes", "scopes applies to tool rules only")
    if data.get("when") is not None or data.get("unless") is not None:
        raise PydanticCustomError(
            "scopes",
            "a rule with scopes has no when/unless (scopes are checked before the arguments "
            "are read): put the condition on another rule",
        )
    return value
