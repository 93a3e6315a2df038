"""docs."""
