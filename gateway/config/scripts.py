"""The config of sandboxed scripts: script tools (``transport: script``), hooks and the pool."""

from __future__ import annotations

from typing import Annotated, Any, Self

from pydantic import Field, model_validator

from gateway.config._strict import Strict

__all__ = ["HookConfig", "SandboxConfig", "ScriptConfig", "ScriptLimits", "SourceConfig"]


class ScriptLimits(Strict):
    """What one run of a script or hook may use; hitting a limit is an error result naming it."""

    timeout: float = Field(5.0, gt=0, le=600, description="Seconds of wall time per run.")
    memory_mb: int = Field(64, ge=1, le=4096, description="Heap memory, in MiB.")
    recursion: int = Field(200, ge=10, le=10_000, description="Function call depth.")
    sub_calls: int = Field(20, ge=0, le=1000, description="Gateway tool calls per run.")


class SourceConfig(Strict):
    """Python source: a file next to the config, or inline."""

    file: str | None = Field(None, description="A .py file, relative to the config file.")
    source: str | None = Field(None, description="The source inline.")
    limits: ScriptLimits = ScriptLimits()

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.file is None) == (self.source is None):
            raise ValueError("give exactly one of 'file' and 'source'")
        return self


class ScriptConfig(SourceConfig):
    """A script tool: ``def run(...)`` is called with the tool's arguments."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    description: str = ""
    input_schema: dict[str, Any] | None = Field(
        None, description="JSON Schema of the arguments (default: from run()'s signature)."
    )


class HookConfig(SourceConfig):
    """``before_call`` and/or ``after_call`` around the calls of the tools it selects."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
    tools: list[str] = Field(
        default_factory=lambda: ["*"], min_length=1, description="Globs on exposed tool names."
    )


class SandboxConfig(Strict):
    """The pool of sandbox worker processes (started and stopped with the gateway), and how
    many runs of scripts and hooks may go on at once.

    A script keeps its worker while it waits for a sub-call, so the runs its sub-calls start
    (scripts, and hooks around them) never wait for a slot: past a bound they fail at once
    with an error result naming it, their callers read the error and end. A top-level call's
    run waits for a slot at most ``checkout_timeout``.
    """

    min_workers: int = Field(1, ge=0, le=64, description="Workers kept warm.")
    max_workers: int = Field(
        4,
        ge=1,
        le=64,
        description=(
            "Worker processes at most, so the most runs of scripts and hooks at once "
            "gateway-wide; past it a top-level call's run waits up to checkout_timeout and "
            "a run started by a script's sub-call fails at once."
        ),
    )
    checkout_timeout: float = Field(
        10.0,
        gt=0,
        le=600,
        description=(
            "Seconds a top-level call's run waits for a free run slot, and any run for a "
            "worker of the pool, before it fails."
        ),
    )
    runs_per_principal: int = Field(
        3,
        ge=1,
        le=64,
        description=(
            "Most runs at once of one principal, over all its sessions and calls (nested runs "
            "included); below max_workers, so one principal cannot take every worker."
        ),
    )
    runs_per_call: int = Field(
        3,
        ge=1,
        le=64,
        description=(
            "Most runs at once within one top-level call: its script and the scripts and "
            "hooks its sub-calls reach (a chain of scripts calling scripts)."
        ),
    )
    sub_calls_per_call: int = Field(
        100,
        ge=0,
        le=100_000,
        description=(
            "Gateway tool calls in all made by the runs within one top-level call (each run "
            "also has its own limits.sub_calls)."
        ),
    )
