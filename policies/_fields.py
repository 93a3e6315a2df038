"""Building blocks of the policy file models: strict models, and field types whose bad values
raise clean, located errors."""

from __future__ import annotations

import re
from typing import Any

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic_core import PydanticCustomError

__all__ = ["Strict", "checked", "pattern_problem"]


class Strict(BaseModel):
    """A frozen model that refuses unknown keys and coercion."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def checked(problem: Any, kind: str) -> Any:
    """An after-validator raising a clean, located error when ``problem(value)`` says so."""

    def check(value: str) -> str:
        message = problem(value)
        if message is not None:
            raise PydanticCustomError(kind, message)
        return value

    return AfterValidator(check)


def pattern_problem(pattern: str, expected: str) -> Any:
    """A ``problem`` for `checked`: values not matching ``pattern`` are an invalid ``expected``."""
    compiled = re.compile(pattern)
    return lambda value: None if compiled.match(value) else f"invalid {expected}: {value!r}"
