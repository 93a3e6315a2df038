"""Errors of the policies layer, under `toolsets.errors.LockgateError` as every error of ours is.

An invalid policy file is a `toolsets.errors.PolicyError` (a `ConfigError` with file, line and
key); these two are raised while a message is parsed or a condition evaluated, and caught where the
policy decides (an evaluation error fails closed to ``deny``).
"""

from __future__ import annotations

from toolsets.errors import LockgateError

__all__ = ["ConditionError", "TemplateError"]


class ConditionError(LockgateError):
    """A condition failed to evaluate (missing key, type error, non-boolean result, ...)."""


class TemplateError(LockgateError, ValueError):
    """A message's placeholder syntax is invalid."""
