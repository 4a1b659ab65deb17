"""The one CSV writer of the build scripts: exact, deterministic text for the bundled tables.

``repr`` keeps every float bit for bit; booleans and non-finite numbers are refused rather than
written as something a reader would take differently.
"""

from __future__ import annotations

import csv
import io
import math


def cell(value: object) -> str:
    """One CSV cell: empty for None, ``repr`` for floats, text otherwise."""
    if value is None:
        return ""
    if isinstance(value, bool):
        raise TypeError(f"unexpected boolean {value!r}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"unexpected non-finite number {value!r}")
        return repr(value)
    return str(value)


def csv_bytes(columns: list[str], rows: list[dict]) -> bytes:
    """The table as UTF-8 CSV bytes with a header, ``\\n`` line ends, cells by :func:`cell`."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([cell(row.get(c)) for c in columns])
    return buffer.getvalue().encode("utf-8")
