"""The ranges of Avro's ``int`` and ``long``. fastavro does not check them when it writes,
so the rules on a record's fields (pipeline/model/rules.py, the cron schedule's) and the
codecs that write the current schema (pipeline/serde/direct.py) do, against these."""

from __future__ import annotations

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
