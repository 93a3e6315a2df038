"""A small OpenAI-compatible server with scripted replies, for running the examples offline.

Serves ``POST /v1/chat/completions`` and ``POST /v1/responses``. While the conversation has no
tool results, the "model" makes the scripted tool calls (by default: write two files, delete
one; only tools it was offered); once tool results are in, it answers with a summary of them.
Every request's message roles (or input item types) are kept in ``app.state.requests``.

Run standalone: ``python examples/fake_openai_server.py --port 8000``, then point an ``openai``
client at ``http://127.0.0.1:8000/v1``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

MODEL = "fake-gpt"


FILES_SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("files__write_file", {"path": "config/.env", "content": "TOKEN=hunter2\n"}),
    ("files__write_file", {"path": "config/app.toml", "content": "debug = false\n"}),
    ("files__delete_file", {"path": "config/old.toml"}),
]
"""The default script: write a secrets file, write a config file, delete a file."""


def _script(request: Request, offered: set[str]) -> list[tuple[int, str, dict[str, Any]]]:
    script: list[tuple[str, dict[str, Any]]] = request.app.state.script
    return [(i, name, args) for i, (name, args) in enumerate(script) if name in offered]


def _offered(tools: list[dict[str, Any]]) -> set[str]:
    return {t.get("name") or t.get("function", {}).get("name") for t in tools}


def _chat_reply(request: Request, body: dict[str, Any]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = body.get("messages", [])
    results = [m for m in messages if m.get("role") == "tool"]
    if results:
        summary = "; ".join(f"{m['tool_call_id']}: {m['content']}" for m in results)
        return {"role": "assistant", "content": f"All done. {summary}"}
    calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for i, n, a in _script(request, _offered(body.get("tools") or []))
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}


async def chat_completions(request: Request) -> JSONResponse:
    body = await request.json()
    request.app.state.requests.append([m.get("role") for m in body.get("messages", [])])
    message = _chat_reply(request, body)
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return JSONResponse(
        {
            "id": f"chatcmpl-{len(request.app.state.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", MODEL),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )


def _input_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    items = body.get("input")
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _responses_output(request: Request, body: dict[str, Any]) -> list[dict[str, Any]]:
    items = _input_items(body)
    results = [i for i in items if i.get("type") == "function_call_output"]
    if results:
        summary = "; ".join(f"{i['call_id']}: {i['output']}" for i in results)
        text = {"type": "output_text", "text": f"All done. {summary}", "annotations": []}
        return [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [text],
            }
        ]
    return [
        {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": f"call_{i}",
            "name": n,
            "arguments": json.dumps(a),
            "status": "completed",
        }
        for i, n, a in _script(request, _offered(body.get("tools") or []))
    ]


async def responses(request: Request) -> JSONResponse:
    body = await request.json()
    items = _input_items(body)
    request.app.state.requests.append([i.get("type") or i.get("role") for i in items])
    return JSONResponse(
        {
            "id": f"resp_{len(request.app.state.requests)}",
            "object": "response",
            "created_at": int(time.time()),
            "model": body.get("model", MODEL),
            "status": "completed",
            "output": _responses_output(request, body),
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": body.get("tools") or [],
        }
    )


def build_app(script: list[tuple[str, dict[str, Any]]] | None = None) -> Starlette:
    """The fake server's app; ``script`` is the tool calls of the first turn (by default,
    `FILES_SCRIPT`). Only calls of tools offered in the request are made."""
    routes = [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/responses", responses, methods=["POST"]),
    ]
    app = Starlette(routes=routes)
    app.state.requests = []
    app.state.script = list(FILES_SCRIPT if script is None else script)
    return app


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Server(uvicorn.Server):
    """A uvicorn server that sets ``ready`` once it listens."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = anyio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()


@contextlib.asynccontextmanager
async def serve(app: Starlette, port: int | None = None) -> AsyncIterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1 in this event loop; yields the ``/v1`` base URL."""
    port = port or free_port()
    server = _Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(20):
            await server.ready.wait()
        try:
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            server.should_exit = True


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    uvicorn.run(build_app(), host="127.0.0.1", port=parser.parse_args().port, log_level="info")
