"""docs/architecture.md names every wrapper of the call chain a gateway builds, so the page
cannot drift from `gateway.wiring` (the chain is built through the public `Gateway`)."""

from __future__ import annotations

import re
from pathlib import Path

from support import echo_upstream, write_config

from gateway import Gateway
from toolsets.abstract import Toolset
from toolsets.combined import CombinedToolset
from toolsets.wrapper import WrapperToolset

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
HOOK = """
def before_call(tool, args, ctx):
    return None
"""
SCRIPT = """
def run() -> str:
    return "ran"
"""


def _config(tmp_path: Path) -> Path:
    """An upstream, a script server, a hook and an external tool: every kind of step."""
    scripts = {"name": "ops", "transport": "script", "scripts": [{"name": "s", "source": SCRIPT}]}
    return write_config(
        tmp_path,
        [echo_upstream("echo"), scripts],
        approvals={"store": "memory"},
        hooks=[{"name": "h", "tools": ["echo__*"], "source": HOOK}],
        external_tools=[{"name": "lookup", "description": "looked up by a worker"}],
    )


def _chain(toolset: Toolset) -> list[type[Toolset]]:
    """The classes of ``toolset`` and everything below it, outermost first."""
    found: list[type[Toolset]] = [type(toolset)]
    if isinstance(toolset, WrapperToolset):
        found += _chain(toolset.wrapped)
    elif isinstance(toolset, CombinedToolset):
        for child in toolset.toolsets:
            found += _chain(child)
    return found


def test_the_wrappers_of_the_chain_are_drawn_in_the_order_a_call_passes_them(
    tmp_path: Path,
) -> None:
    gateway = Gateway.from_config(_config(tmp_path))  # built, not started
    wrappers: list[str] = []
    toolset: Toolset = gateway.parts.root
    while isinstance(toolset, WrapperToolset):
        wrappers.append(type(toolset).__name__)
        toolset = toolset.wrapped
    wrappers.append(type(toolset).__name__)  # the catalogue the chain serves
    path = DOC.read_text(encoding="utf-8").partition("## The path of one call")[2]
    drawn = re.findall(r"^\s*-> (\w+)", path, re.MULTILINE)
    assert [name for name in drawn if name in wrappers] == wrappers


def test_every_toolset_a_gateway_builds_is_named_in_the_doc(tmp_path: Path) -> None:
    gateway = Gateway.from_config(_config(tmp_path))
    text = DOC.read_text(encoding="utf-8")
    missing = {t.__name__ for t in _chain(gateway.parts.root)} - set(re.findall(r"\w+", text))
    assert not missing, f"docs/architecture.md does not name {sorted(missing)}"
