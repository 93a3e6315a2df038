"""Scripts calling scripts cannot take the sandbox: runs at once are bounded per top-level call,
per principal and gateway-wide, sub-calls in all per top-level call; the excess fails at once
with an error naming the bound and its config key, and other principals' calls are served (their
p95 under attack against a control). Hooks run around a script's sub-calls, not their own."""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from script_support import OPS, scripts_config

from gateway.gateway import Gateway
from toolsets.context import CallContext, Principal
from toolsets.result import ToolResult

ATTACKER = Principal(id="agent:attacker")
VICTIM = Principal(id="agent:victim")
BOMB = """
import asyncio

async def run() -> list:
    return await asyncio.gather(*[async_tools.ops__{other}() for _ in range(3)])
"""
PING = "def run() -> str:\n    return tools.ops__pong()\n"
PONG = "def run() -> str:\n    return tools.ops__ping()\n"
USEFUL = '''
def run(text: str) -> str:
    """Echo through the gateway."""
    return tools.echo__echo(text=text)
'''
CHAIN = {
    "a": "def run() -> str:\n    return tools.ops__b()\n",
    "b": "def run() -> str:\n    return tools.ops__c()\n",
    "c": "def run() -> str:\n    return tools.ops__d()\n",
    "d": "def run() -> str:\n    return 'bottom'\n",
}
HELD = "def run() -> dict:\n    return tools.echo__weather(city='Oslo')\n"
OUTER = "def run() -> str:\n    return tools.ops__inner()\n"
INNER = "def run() -> str:\n    return 'inner'\n"
CHATTY = "def run() -> list:\n    return [tools.ops__echo3() for _ in range(3)]\n"
ECHO3 = "def run() -> list:\n    return [tools.echo__echo(text=str(i)) for i in range(3)]\n"
HOOK = """
def before_call(tool, args, ctx):
    if args.get("text") == "probe":
        return {"result": "probe saw " + tools.echo__echo(text="inner")}
    return None

def after_call(tool, args, result, ctx):
    return result["content"][0]["text"] + " (hooked)"
"""


def _config(tmp_path: Path, scripts: dict[str, str], **sandbox: Any) -> Path:
    path = scripts_config(tmp_path, scripts)
    body = yaml.safe_load(path.read_text(encoding="utf-8"))
    body["sandbox"].update(sandbox)
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def _as(principal: Principal, session: str) -> CallContext:
    return CallContext(principal=principal, session_id=session)


def _p95(latencies: list[float]) -> float:
    ordered = sorted(latencies)
    return ordered[math.ceil(0.95 * len(ordered)) - 1]


async def test_scripts_fanning_out_through_each_other_fail_fast_and_others_stay_served(
    tmp_path: Path,
) -> None:
    bombs = {"bomb": BOMB.format(other="bomb2"), "bomb2": BOMB.format(other="bomb")}
    config = _config(tmp_path, {**bombs, "ping": PING, "pong": PONG, "useful": USEFUL})
    attacks: list[ToolResult] = []

    async def victim(gateway: Gateway, session: str) -> list[float]:
        latencies = []
        for i in range(30):
            started = time.perf_counter()
            result = await gateway.call_tool("ops__useful", {"text": str(i)}, _as(VICTIM, session))
            latencies.append(time.perf_counter() - started)
            assert result.first_text() == str(i), result.first_text()
        return latencies

    async def attack(gateway: Gateway, tool: str, session: str, stop: anyio.Event) -> None:
        while not stop.is_set():
            attacks.append(await gateway.call_tool(tool, {}, _as(ATTACKER, session)))

    async with Gateway.from_config(config) as gateway:
        await victim(gateway, "warm-up")
        with anyio.fail_after(60):  # today: every script tool stops answering
            control = await victim(gateway, "control")
            async with anyio.create_task_group() as tg:
                stop = anyio.Event()
                for i, tool in enumerate(["ops__bomb", "ops__bomb", "ops__bomb", "ops__ping"]):
                    tg.start_soon(attack, gateway, tool, f"attack-{i}", stop)
                under_attack = await victim(gateway, "under-attack")
                stop.set()
            # Alone (another principal), the same script meets the bound of one call first.
            after = await gateway.call_tool("ops__bomb", {}, _as(Principal(id="agent:b"), "s"))
    control_p95, attack_p95 = _p95(control), _p95(under_attack)
    print(f"victim p95: control {control_p95 * 1e3:.1f} ms, attack {attack_p95 * 1e3:.1f} ms")
    print(f"attack calls: {len(attacks)}; {attacks[0].first_text()}")
    assert len(attacks) >= 4
    odd = [a.first_text() for a in attacks if not (a.is_error and "sandbox." in a.first_text())]
    assert not odd, odd[:3]
    assert {"ops__bomb", "ops__ping"} <= {a.first_text().split()[0] for a in attacks}
    assert after.is_error
    assert "sandbox.runs_per_call" in after.first_text()
    # Generous for a loaded machine: the attacker's churn shares two cores with the victim.
    assert attack_p95 < 10 * control_p95 + 0.5


async def test_a_chain_of_scripts_past_runs_per_call_fails_at_once_and_names_it(
    tmp_path: Path,
) -> None:
    async with Gateway.from_config(_config(tmp_path, CHAIN)) as gateway:
        with anyio.fail_after(20):  # today: three scripts deep already take every worker
            three = await gateway.call_tool("ops__b", {}, _as(VICTIM, "s"))
            four = await gateway.call_tool("ops__a", {}, _as(VICTIM, "s"))
    assert three.first_text() == "bottom"
    assert four.is_error
    assert (
        "ops__d was refused: one call runs at most 3 scripts and hooks at once "
        "(sandbox.runs_per_call)"
    ) in four.first_text()


async def test_sub_calls_past_sub_calls_per_call_fail_in_every_run_of_the_call(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path, {"chatty": CHATTY, "echo3": ECHO3}, sub_calls_per_call=5)
    async with Gateway.from_config(config) as gateway:
        result = await gateway.call_tool("ops__chatty", {}, _as(VICTIM, "s"))
        alone = await gateway.call_tool("ops__echo3", {}, _as(VICTIM, "s"))
    assert result.is_error
    # The run that went over is named, in the error its caller raised.
    assert result.first_text().startswith("ops__chatty raised RuntimeError: ops__echo3: ")
    assert (
        "ops__echo3 hit the sub-call limit of its top-level call (5, sandbox.sub_calls_per_call)"
    ) in result.first_text()
    assert alone.first_text() == '["0", "1", "2"]'


@asynccontextmanager
async def _held(gateway: Gateway, *principals: Principal) -> AsyncIterator[list[ToolResult]]:
    """Each of ``principals`` runs a script held on an approval (its run slot taken) while the
    block runs; then the calls are approved and end."""
    ended: list[ToolResult] = []
    async with (
        gateway.events.subscribe(["tool.approval.requested"]) as events,
        anyio.create_task_group() as tg,
    ):
        for principal in principals:

            async def held(principal: Principal = principal) -> None:
                ended.append(await gateway.call_tool("ops__held", {}, _as(principal, "held")))

            tg.start_soon(held)
        approvals = []
        with anyio.fail_after(90):
            async for event in events:
                approvals.append(event.data["approval_id"])
                if len(approvals) == len(principals):
                    break
        yield ended
        for approval in approvals:
            await gateway.approvals.decide(approval, "approve", by=OPS, channel="api")


@pytest.mark.parametrize(
    "victim",
    [
        pytest.param(VICTIM, id="another-id"),
        pytest.param(Principal(id=ATTACKER.id, tenant="other"), id="same-id-another-tenant"),
    ],
)
async def test_a_principal_past_runs_per_principal_is_refused_and_another_is_served(
    tmp_path: Path, victim: Principal
) -> None:
    scripts = {"held": HELD, "outer": OUTER, "inner": INNER}
    config = _config(tmp_path, scripts, runs_per_principal=2)
    async with Gateway.from_config(config) as gateway:
        async with _held(gateway, ATTACKER) as ended:
            with anyio.fail_after(90):
                refused = await gateway.call_tool("ops__outer", {}, _as(ATTACKER, "s"))
                served = await gateway.call_tool("ops__outer", {}, _as(victim, "s"))
        again = await gateway.call_tool("ops__outer", {}, _as(ATTACKER, "s"))
    assert refused.is_error
    assert (
        "ops__inner was refused: principal 'agent:attacker' runs at most 2 scripts and hooks "
        "at once (sandbox.runs_per_principal)"
    ) in refused.first_text()
    assert served.first_text() == "inner"
    assert again.first_text() == "inner"
    assert [r.structured_content for r in ended] == [{"city": "Oslo", "sky": "clear"}]


async def test_a_full_gateway_makes_a_top_level_run_wait_at_most_checkout_timeout(
    tmp_path: Path,
) -> None:
    scripts = {"held": HELD, "outer": OUTER, "inner": INNER}
    config = _config(tmp_path, scripts, max_workers=2, checkout_timeout=0.5)
    other = Principal(id="agent:other")
    async with Gateway.from_config(config) as gateway:
        async with _held(gateway, ATTACKER, VICTIM):
            with anyio.fail_after(20):
                started = time.perf_counter()
                waited = await gateway.call_tool("ops__inner", {}, _as(other, "s"))
                elapsed = time.perf_counter() - started
        served = await gateway.call_tool("ops__outer", {}, _as(other, "s"))
    assert waited.is_error
    assert waited.first_text() == (
        "ops__inner was refused: the gateway runs at most 2 scripts and hooks at once "
        "(sandbox.max_workers); none was free in 0.5 s, sandbox.checkout_timeout"
    )
    assert 0.5 <= elapsed < 10
    assert served.first_text() == "inner"


async def test_scripts_waiting_on_held_sub_calls_do_not_stop_other_runs(tmp_path: Path) -> None:
    # Today a ``tools.*`` sub-call blocks one of pydantic-monty's runtime threads (one per core)
    # until it is answered: three held at once stopped every run on this two-core machine.
    config = _config(tmp_path, {"held": HELD, "useful": USEFUL})
    held_by = [Principal(id=f"agent:held-{i}") for i in range(3)]
    async with Gateway.from_config(config) as gateway, _held(gateway, *held_by) as ended:
        with anyio.fail_after(20):
            served = await gateway.call_tool("ops__useful", {"text": "x"}, _as(VICTIM, "s"))
    assert served.first_text() == "x"
    assert len(ended) == 3
    assert all(r.structured_content == {"city": "Oslo", "sky": "clear"} for r in ended)


async def test_hooks_run_around_a_script_sub_calls_but_not_around_their_own(
    tmp_path: Path,
) -> None:
    path = scripts_config(
        tmp_path,
        {"useful": USEFUL},
        hooks=[{"name": "mark", "tools": ["echo__echo"], "source": HOOK}],
    )
    async with Gateway.from_config(path) as gateway:
        with anyio.fail_after(20):
            by_script = await gateway.call_tool("ops__useful", {"text": "hi"}, _as(VICTIM, "s"))
            direct = await gateway.call_tool("echo__echo", {"text": "x"}, _as(VICTIM, "s"))
            probe = await gateway.call_tool("echo__echo", {"text": "probe"}, _as(VICTIM, "s"))
    assert by_script.first_text() == "hi (hooked)"  # the script's sub-call passed the hook
    assert direct.first_text() == "x (hooked)"
    assert probe.first_text() == "probe saw inner"  # the hook's own sub-call did not
