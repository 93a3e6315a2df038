"""The audit log: the hash-chained log itself (SQLite), the sink that appends bus events to it,
verifying the chain, and replaying recorded calls under another policy."""
