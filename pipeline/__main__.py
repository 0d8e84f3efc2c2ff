"""``python -m pipeline``: the engine's commands alone (``jobstream`` adds those of ops/)."""

from pipeline.cli import main

main()
