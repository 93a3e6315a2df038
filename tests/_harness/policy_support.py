"""Helpers for policy tests: fixture paths, tools and principals."""

from __future__ import annotations

from typing import Any

from paths import REPO, TESTS

from policies import PolicyEngine
from toolsets.context import Principal
from toolsets.tooldef import ToolDef

FIXTURES = TESTS / "policies" / "fixtures"
DEFAULT_POLICY = REPO / "configs" / "policies" / "default.yaml"
DEFAULT_CASES = REPO / "configs" / "policies" / "default.cases.yaml"


def engine(*names: str) -> PolicyEngine:
    """An engine over fixture files, layered in the given order."""
    return PolicyEngine.load([FIXTURES / name for name in names])


def tool(name: str, annotations: dict[str, Any] | None = None) -> ToolDef:
    """A tool exposed as ``server__upstream``."""
    server, _, upstream = name.partition("__")
    return ToolDef(name=name, server=server, upstream_name=upstream, annotations=annotations)


def who(principal_id: str = "agent:test", *roles: str, **claims: Any) -> Principal:
    """A principal with roles and claims."""
    return Principal(id=principal_id, roles=frozenset(roles), claims=claims)
