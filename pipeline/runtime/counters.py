"""What a component counts since start, for its stats line (pipeline/runtime/health.py).

The task, the timer and status processors, the retry router, the worker and the view
updater each keep their counts in a :class:`Counters`, and a stats line logs
:meth:`Counters.snapshot`, so they all count and report the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any


class Counters:
    """Counts by name, each from zero: ``counts.fired += n`` counts, ``counts.fired`` reads.

    The names are declared once, at construction. Reading a name that was not declared is
    an AttributeError, so a misspelt ``+=`` fails rather than counting on its own. A
    subclass keeps what is not a count (a gauge, a breakdown) as more attributes, which
    the snapshot includes.
    """

    def __init__(self, *names: str) -> None:
        for name in names:
            setattr(self, name, 0)

    def __getattr__(self, name: str) -> int:
        # Called only for an attribute never set: every declared count is set in __init__.
        raise AttributeError(f"{type(self).__name__} has no count {name!r}")

    if TYPE_CHECKING:
        # The counts are attributes made at run time: this lets type checkers accept
        # ``counts.fired += n`` (reading them is __getattr__'s int), at no cost per count.
        def __setattr__(self, name: str, value: Any) -> None: ...

    def count(self, name: str, n: int = 1) -> None:
        """Add ``n`` to the count ``name``, when the name is known at run time only."""
        setattr(self, name, getattr(self, name) + n)

    def snapshot(self) -> dict[str, object]:
        """Every count (and attribute a subclass adds) by name, as the stats line logs them."""
        return dict(vars(self))
