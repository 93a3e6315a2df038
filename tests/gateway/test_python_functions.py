"""Local Python functions registered from the config sit beside MCP tools, behind the same chain."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from support import echo_upstream, write_config

from gateway import Gateway
from toolsets import ConfigError

MODULE = '''
import anyio
import threading


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


async def stuck() -> str:
    """Never finishes on its own."""
    await anyio.Event().wait()
    return "never"


async def also_stuck() -> str:
    """Never finishes either."""
    await anyio.Event().wait()
    return "never"
'''


def _config(tmp_path: Path, module: str, functions: list[object]) -> Path:
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(MODULE))
    server = {"name": "local", "transport": "python", "functions": functions, "timeout": 5}
    return write_config(tmp_path, [echo_upstream("echo"), server], call_timeout=30)


async def test_functions_named_in_the_config_are_tools_next_to_upstream_tools(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path, "tools_a", ["tools_a:add"])
    async with Gateway.from_config(config) as gateway:
        tools = {tool.name: tool for tool in await gateway.list_tools()}
        result = await gateway.call_tool("local__add", {"a": 2, "b": 3})
        bad = await gateway.call_tool("local__add", {"a": "two", "b": 3})
    assert {"echo__echo", "local__add"} <= set(tools)
    assert tools["local__add"].input_schema["properties"]["a"]["description"] == "The first."
    assert result.structured_content == {"result": 5}
    assert bad.is_error
    assert "a" in bad.first_text()


async def test_a_function_timeout_beats_the_server_timeout(tmp_path: Path) -> None:
    functions: list[object] = [
        {"function": "tools_b:stuck", "timeout": 0.2},
        {"function": "tools_b:also_stuck", "name": "slowpoke"},
    ]
    config = _config(tmp_path, "tools_b", functions)
    async with Gateway.from_config(config) as gateway:
        quick = await gateway.call_tool("local__stuck", {})
        assert quick.is_error
        assert "timed out after 0.2 s" in quick.first_text()
        assert "local__slowpoke" in {tool.name for tool in await gateway.list_tools()}


def test_a_bad_import_path_is_a_config_error_at_its_line(tmp_path: Path) -> None:
    config = _config(tmp_path, "tools_c", ["tools_c:add", "tools_c:nope", "no_such_module:f"])
    with pytest.raises(ConfigError) as caught:
        Gateway.from_config(config)
    issues = caught.value.issues
    assert [issue.key for issue in issues] == ["servers.1.functions.1", "servers.1.functions.2"]
    assert all(issue.line is not None for issue in issues)
    assert "no attribute 'nope'" in issues[0].message


BIG = '''
def sized(kib: int) -> str:
    """A text of ``kib`` KiB."""
    return "x" * (kib * 1024)


def sized_json(kib: int) -> dict[str, str]:
    """A structured result of ``kib`` KiB."""
    return {"data": "x" * (kib * 1024)}
'''


@pytest.mark.parametrize("function", ["sized", "sized_json"])
async def test_max_result_bytes_bounds_a_local_function_result_like_any_upstream(
    tmp_path: Path, function: str
) -> None:
    (tmp_path / "big_tools.py").write_text(textwrap.dedent(BIG))
    server = {
        "name": "local",
        "transport": "python",
        "functions": [f"big_tools:{function}"],
        "max_result_bytes": 64 * 1024,
    }
    config = write_config(tmp_path, [server])
    async with Gateway.from_config(config) as gateway:
        small = await gateway.call_tool(f"local__{function}", {"kib": 8})
        big = await gateway.call_tool(f"local__{function}", {"kib": 2048})

    assert not small.is_error
    assert big.is_error
    text = big.first_text()
    assert "max_result_bytes" in text
    assert str(64 * 1024) in text
    assert len(text) < 1000
