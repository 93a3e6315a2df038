"""Background work beside the calls: `TaskOwner` (tasks owned for the life of an ``async with``),
loops that survive failures such as a store outage (`until_done`, `keep_going`), and the store
health they report to ``/healthz``."""
