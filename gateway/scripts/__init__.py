"""Sandboxed Python in the gateway: script tools and hooks, run by pydantic-monty."""
