"""Per-session state: what each downstream session did, as policies read it."""

from gateway.sessions.book import SessionBook, session_key
from gateway.sessions.store import MemorySessionStore, SessionStore, SQLiteSessionStore

__all__ = ["MemorySessionStore", "SQLiteSessionStore", "SessionBook", "SessionStore", "session_key"]
