"""langgraph."""
