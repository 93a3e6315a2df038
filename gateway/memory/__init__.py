"""The in-memory backend of every store (pending calls, grants, tool pins, sessions, rate
counters): for tests and ephemeral gateways; nothing survives the process."""
