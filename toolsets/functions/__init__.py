"""Local Python functions as tools: the toolset, the schemas read from type hints and
docstrings, and the `ToolContext` a function may ask for."""
