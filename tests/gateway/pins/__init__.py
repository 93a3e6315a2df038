"""pins."""
