"""Scripts and hooks, through the MCP Python SDK client over HTTP in both eras: a script over a
sandbox limit and a hook that stops a call are refusals (``sandbox_limit``, ``hook``); a script
that raises is an error result without ``lockgate/refusal``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from refusal_support import Served, connect, serve
from script_support import scripts_config
from support import MODES

SCRIPTS = {
    "chatty": "def run():\n    return [tools.echo__echo(text=str(i)) for i in range(5)]\n",
    "opens": "def run():\n    return open('/etc/passwd').read()\n",
}
BROKEN = "def before_call(tool, args, ctx):\n    return 1 / 0\n"


@pytest.fixture(scope="module")
async def scripted(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    hooks = [{"name": "broken", "tools": ["echo__whoami"], "source": BROKEN}]
    config = scripts_config(
        tmp_path_factory.mktemp("scripts"), SCRIPTS, hooks=hooks, limits={"sub_calls": 3}
    )
    async with serve(config) as running:
        yield running


def refusal_of(result: Any) -> dict[str, Any]:
    assert result.is_error
    found: dict[str, Any] = result.meta["lockgate/refusal"]
    assert [block.text for block in result.content] == [found["message"]]
    return found


@pytest.mark.parametrize("mode", MODES)
async def test_a_script_over_its_sub_call_limit_is_a_sandbox_limit_refusal(
    scripted: Served, mode: str
) -> None:
    async with connect(scripted, mode) as client:
        with anyio.fail_after(60):
            result = await client.call_tool("ops__chatty", {})

    found = refusal_of(result)
    assert "sub-call limit (3, limits.sub_calls)" in found["message"]
    assert (found["kind"], found["details"], found["unblock"]) == (
        "sandbox_limit",
        {"limit": "sub_calls"},
        {"action": "change_arguments"},
    )


@pytest.mark.parametrize("mode", MODES)
async def test_a_hook_that_fails_refuses_the_call_naming_the_hook(
    scripted: Served, mode: str
) -> None:
    async with connect(scripted, mode) as client:
        with anyio.fail_after(60):
            result = await client.call_tool("echo__whoami", {})

    found = refusal_of(result)
    assert found["message"].startswith("Not executed: hook broken raised ZeroDivisionError")
    assert (found["kind"], found["rule"]) == ("hook", "broken")


@pytest.mark.parametrize("mode", MODES)
async def test_a_script_that_raises_is_an_error_not_a_refusal(scripted: Served, mode: str) -> None:
    async with connect(scripted, mode) as client:
        with anyio.fail_after(60):
            result = await client.call_tool("ops__opens", {})

    assert result.is_error
    assert "PermissionError" in result.content[0].text
    assert "lockgate/refusal" not in (result.meta or {})
