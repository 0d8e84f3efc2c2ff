"""``python -m ops``: the whole ``jobstream`` command, as the console script runs it."""

from ops.command import main

main()
