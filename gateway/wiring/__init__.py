"""wiring."""
