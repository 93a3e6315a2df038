"""A held call answered as a task is approved from the approvals page (Debian's chromium driven
by Playwright) and the task completes once: the call runs once, its result is the task's, and
it stays the task's on later reads."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from gateway_faces import Face
from playwright.async_api import async_playwright, expect
from support import echo_upstream, serve_asgi, write_config
from tasks_client import call_as_task, open_tasks_client, request, until_ended
from web_support import APPROVERS, CHROMIUM, HAVE_CHROMIUM, HERE, card, marker, new_page, sign_in

from gateway.gateway import Gateway
from gateway.http.app import build_app

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]

pytestmark = pytest.mark.skipif(not HAVE_CHROMIUM, reason="chromium is not installed")


async def test_a_held_task_approved_on_the_page_completes_once(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        [echo_upstream("e")],
        policies={"files": [str(HERE / "fixtures" / "policy.yaml")]},
        approvals={"store": "sqlite", "path": str(tmp_path / "pending.db")},
        auth={"approvers": APPROVERS},
        startup_wait=60,  # a loaded machine may take seconds to spawn the upstream
    )
    text = marker("page-task")
    gateway = Gateway.from_config(config)
    with anyio.fail_after(120):
        async with (
            serve_asgi(build_app(gateway)) as url,
            open_tasks_client(Face("http", "auto"), config=config, url=f"{url}/mcp") as client,
            gateway.events.subscribe(["tool.call", "task.completed"]) as events,
            async_playwright() as pw,
        ):
            created = await call_as_task(client, "e__echo", {"text": text})
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            async with new_page(browser) as page:
                await sign_in(page, url)
                item = card(page, text)
                await expect(item).to_have_count(1, timeout=15_000)
                await item.locator("button.approve").click()
                await expect(item).to_have_count(0, timeout=15_000)
            await browser.close()
            ended = await until_ended(client, created["taskId"])
            again = await request(client, "tasks/get", created["taskId"])
            seen = []
            async for event in events:
                seen.append(event.type)
                if event.type == "task.completed":
                    break
    assert created["status"] == "input_required"
    assert ended["status"] == "completed"
    assert ended["result"]["content"][0]["text"] == text
    assert again["status"] == "completed"
    assert again["result"] == ended["result"]
    assert seen == ["tool.call", "task.completed"]  # the call ran once; the task ended once
