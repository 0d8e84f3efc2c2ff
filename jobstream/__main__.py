"""``python -m jobstream``: the ``jobstream`` command, as the console script runs it."""

from jobstream._ops.command import main

main()
