"""Reading jobstream's topics at a console: ``jobstream tail``."""
