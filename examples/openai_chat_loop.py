"""An OpenAI Chat Completions tool loop through the gateway, with an approval in the middle.

Run (offline, no API key): ``python examples/openai_chat_loop.py``.

The real ``openai`` client talks to a local fake OpenAI-compatible server
(``examples/fake_openai_server.py``). Its "model" asks to write ``config/.env`` (held by the
``secrets`` rule for security's approval), write ``config/app.toml`` (allowed) and delete
``config/old.toml`` (denied by the ``no-deletes`` rule: the model reads the rule's message).
`run_tool_calls` runs the three calls concurrently through the gateway: two answer at once, the
``.env`` write comes back as a `PendingApproval`. The host, holding an approver identity,
approves it with edited content; `complete_pending` posts the edit and re-issues the call, which
the gateway executes once. Only then does the loop send the tool messages back to the model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from fake_openai_server import build_app, serve
from openai import AsyncOpenAI

from gateway import Gateway
from gateway.adapters.openai import (
    HostDecision,
    InProcessGateway,
    PendingApproval,
    chat_tools,
    complete_pending,
    run_tool_calls,
)
from toolsets.context import Principal

HERE = Path(__file__).resolve().parent
AGENT = Principal(id="agent:example")
ALICE = Principal(id="user:alice", roles=frozenset({"security"}))


def decide(item: PendingApproval) -> HostDecision:
    """The person at the host: secrets never go into files in clear."""
    print(f"held: {item.tool} {item.args} (approval {item.approval_id}, rule {item.rule_id})")
    edited = {**item.args, "content": "TOKEN=<from the vault>\n"}
    print(f"approved with edited args: {edited}")
    return HostDecision.approve(edited)


async def tool_turn(gateway: InProcessGateway, tool_calls: Any) -> list[dict[str, Any]]:
    """Answer every tool call of one assistant turn; held calls are decided before returning."""
    outcome = await run_tool_calls(gateway, tool_calls)
    messages = list(outcome.messages)
    while outcome.pending:
        decisions = {item.tool_call_id: decide(item) for item in outcome.pending}
        outcome = await complete_pending(gateway, outcome.pending, decisions=decisions)
        messages.extend(outcome.messages)
    return messages


async def chat_loop(client: AsyncOpenAI, gateway: InProcessGateway) -> str:
    """Ask, run tool calls through the gateway, repeat until the model answers in text."""
    tools = chat_tools(await gateway.list_tools())
    messages: list[Any] = [{"role": "user", "content": "Write the app config."}]
    for _ in range(5):
        completion = await client.chat.completions.create(
            model="fake-gpt", messages=messages, tools=tools
        )
        message = completion.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content or ""
        for reply in await tool_turn(gateway, message.tool_calls):
            print(f"tool {reply['tool_call_id']}: {reply['content'].strip()}")
            messages.append(reply)
    return "(no answer)"


async def main() -> None:
    app = build_app()
    async with Gateway.from_config(HERE / "gateway.yaml") as gw, serve(app) as base_url:
        gateway = InProcessGateway(gateway=gw, principal=AGENT, approver=ALICE, channel="openai")
        async with AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0) as client:
            answer = await chat_loop(client, gateway)
        print(f"model: {answer}")
        print(f"requests seen by the model server: {app.state.requests}")
        for call in await gw.store.list():
            args = call.effective_args
            print(f"gateway record: {call.tool} {args} -> {call.state} ({call.decision})")


if __name__ == "__main__":
    anyio.run(main)
