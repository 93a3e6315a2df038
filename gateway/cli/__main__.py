"""``python -m gateway.cli``: the ``lockgate`` command."""

from gateway.cli.main import main

main()
