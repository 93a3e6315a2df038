"""The ``lockgate`` command line: one module per command group; ``main`` (in `main`) is the entry
point."""
