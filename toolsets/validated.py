"""`ValidatingToolset`: arguments are checked against the tool's pinned input schema first."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import jsonschema_rs

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.errors import ArgumentsInvalid
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.wrapper import WrapperToolset

__all__ = ["SchemaValidators", "ValidatingToolset"]

log = logging.getLogger("lockgate.validation")
MAX_REPORTED = 5


class SchemaValidators:
    """Compiled validators, one per tool pin, compiled once and reused."""

    def __init__(self) -> None:
        self._by_pin: dict[str, Any] = {}

    def check(self, tool: ToolDef, args: Mapping[str, Any]) -> None:
        """Raise `ArgumentsInvalid` unless ``args`` is valid for ``tool``."""
        validator = self._by_pin.get(tool.pin)
        if validator is None:
            validator = self._compile(tool)
        if validator is False or validator.is_valid(args):
            return
        problems = [
            f"{'/'.join(str(p) for p in error.instance_path) or '(root)'}: {error.message}"
            for error in list(validator.iter_errors(args))[:MAX_REPORTED]
        ]
        raise ArgumentsInvalid(f"Invalid arguments for tool {tool.name!r}: " + "; ".join(problems))

    def _compile(self, tool: ToolDef) -> Any:
        try:
            validator: Any = jsonschema_rs.validator_for(dict(tool.input_schema))
        except (ValueError, jsonschema_rs.ValidationError) as exc:
            # An upstream with a broken schema: the upstream remains the judge of its arguments.
            log.warning("tool %s: input schema does not compile, not validated: %s", tool.name, exc)
            validator = False
        self._by_pin[tool.pin] = validator
        return validator


class ValidatingToolset(WrapperToolset):
    """Refuses calls whose arguments do not match the schema, before policy and upstream."""

    def __init__(self, wrapped: Toolset, validators: SchemaValidators | None = None) -> None:
        super().__init__(wrapped)
        self.validators = validators or SchemaValidators()

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        try:
            self.validators.check(tool, args)
        except ArgumentsInvalid as exc:
            return ToolResult.error(str(exc))
        return await self.wrapped.call_tool(name, args, ctx, tool)
