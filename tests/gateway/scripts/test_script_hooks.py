"""Hooks in the real sandbox: a before_call that answers the call itself, one that rewrites the
arguments (validated and decided by the policy again), an after_call that trims a result, and a
failing hook that fails the call closed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from script_support import ctx, scripts_config

from gateway.gateway import Gateway

BEFORE = """
def before_call(tool, args, ctx):
    if args.get("text") == "canned":
        return {"result": "a canned answer from " + tool["name"]}
    if args.get("text") == "rewrite":
        return {"args": {"text": "forbidden"}}
    if args.get("text") == "invalid":
        return {"args": {"text": 42}}
    return None
"""
AFTER = """
def after_call(tool, args, result, ctx):
    text = result["content"][0]["text"]
    return text[:10] + "..." if len(text) > 10 else None
"""
BROKEN = """
def before_call(tool, args, ctx):
    return 1 / 0
"""
COUNTED = """
def run() -> str:
    return "ran"
"""


def _hooks(*entries: tuple[str, list[str], str]) -> list[dict[str, Any]]:
    return [{"name": n, "tools": t, "source": s} for n, t, s in entries]


async def test_before_and_after_call_hooks(tmp_path: Path) -> None:
    hooks = _hooks(("canned", ["echo__echo"], BEFORE), ("trim", ["echo__big"], AFTER))
    config = scripts_config(tmp_path, {"counted": COUNTED}, hooks=hooks)
    async with (
        Gateway.from_config(config) as gateway,
        gateway.events.subscribe(["tool.call", "tool.denied"]) as events,
    ):
        canned = await gateway.call_tool("echo__echo", {"text": "canned"}, ctx())
        rewritten = await gateway.call_tool("echo__echo", {"text": "rewrite"}, ctx())
        invalid = await gateway.call_tool("echo__echo", {"text": "invalid"}, ctx())
        plain = await gateway.call_tool("echo__echo", {"text": "plain"}, ctx())
        trimmed = await gateway.call_tool("echo__big", {"kib": 1}, ctx())
        untouched = await gateway.call_tool("ops__counted", {}, ctx())
        seen = events.ready(100)
    assert canned.first_text() == "a canned answer from echo__echo"
    assert rewritten.is_error
    assert rewritten.first_text() == "That text may not be echoed."
    assert invalid.is_error
    assert "arguments are invalid" in invalid.first_text()
    assert plain.first_text() == "plain"
    assert trimmed.first_text() == "xxxxxxxxxx..."
    assert untouched.first_text() == "ran"
    denied = [e.data["args"] for e in seen if e.type == "tool.denied"]
    assert denied == [{"text": "forbidden"}]  # the policy decided the hook's arguments
    called = [e.data["args"].get("text") for e in seen if e.type == "tool.call"]
    assert "canned" not in called  # answered by the hook: nothing below ran


async def test_a_failing_hook_fails_the_call_closed(tmp_path: Path) -> None:
    hooks = _hooks(("broken", ["echo__*"], BROKEN))
    config = scripts_config(tmp_path, {"counted": COUNTED}, hooks=hooks)
    async with Gateway.from_config(config) as gateway:
        refused = await gateway.call_tool("echo__echo", {"text": "x"}, ctx())
        lists = await gateway.call_tool("ops__counted", {}, ctx())
    assert refused.is_error
    assert refused.first_text().startswith("Not executed: hook broken raised ZeroDivisionError")
    assert lists.first_text() == "ran"
