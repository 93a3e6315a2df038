"""The SQLite backend of every store: the gateway's one file, its schema and migrations, and
the pending calls, grants, tool pins and session states kept in it."""
