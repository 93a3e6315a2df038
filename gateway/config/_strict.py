"""`Strict`: the base of the config sections: unknown keys are errors, values are frozen."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Strict"]


class Strict(BaseModel):
    """A config section: an unknown key is an error (naming its line), and it never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)
