"""``python -m jobstream._pipeline``: the engine's commands alone (``jobstream`` adds those of
ops/)."""

from jobstream._pipeline.cli import main

main()
