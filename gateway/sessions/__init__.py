"""Per-session state: what each downstream session did, as policies read it (the backends of
`SessionStore` are in `gateway.memory`, `gateway.sqlite` and `gateway.postgres`)."""

from gateway.sessions.book import SessionBook, session_key
from gateway.sessions.labels import SessionLabelSink
from gateway.sessions.store import SessionStore

__all__ = ["SessionBook", "SessionLabelSink", "SessionStore", "session_key"]
