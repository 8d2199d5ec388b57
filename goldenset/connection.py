"""`Connection`: the one type of a warehouse connection, on every `con` parameter of the library.

Decision: a module of its own at the bottom of the library rather than in `warehouse`,
because `warehouse.connect` runs `migrations.migrate` and the migrations take a connection
too: either of those two holding the name would make an import cycle (a test forbids one).
It is DuckDB's own connection class, not a protocol: the library calls DuckDB-only methods
(`register`, `executemany`, `fetchall` on a result) and mypy checks them against it.
"""

from __future__ import annotations

from typing import TypeAlias

import duckdb

Connection: TypeAlias = duckdb.DuckDBPyConnection
