"""Django's SQLite backend, with each query's ``%s`` -> ``?`` conversion done once.

Django writes SQL with ``%s`` placeholders and its SQLite cursor rewrites them to the
``?`` the sqlite3 module takes with a regular expression on every execute: 7-10 us per
statement on this machine, for an append's UPDATE and INSERT more than SQLite takes to
run them. An append runs them holding the write lock every other appender queues for
(memoryapp.sql.writers_queue), so that time was everyone's. The same few query texts come
back all the time (the hot paths' own, the ORM's), so the conversion is cached per text
(a bounded LRU: a query built with a varying text only misses). Every new connection also
gets the SQL function memoryapp.search_words.SQLITE_FUNCTION, which the full-text
indexes' views and triggers call (migration 0021). Everything else is Django's backend as
is; settings.py names this module as the SQLite ENGINE.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.db.backends.sqlite3 import base

from memoryapp.search_words import SQLITE_FUNCTION, sqlite_search_text


@lru_cache(maxsize=2048)
def qmark(query: str) -> str:
    """``query`` with Django's ``%s`` placeholders as ``?`` and ``%%`` as ``%``, exactly as
    django.db.backends.sqlite3.base.SQLiteCursorWrapper.convert_query does it."""
    return base.FORMAT_QMARK_REGEX.sub("?", query).replace("%%", "%")


class SQLiteCursorWrapper(base.SQLiteCursorWrapper):
    """Django's SQLite cursor, converting positional placeholders through ``qmark``."""

    def convert_query(self, query: str, *, param_names: list[str] | None = None) -> str:
        if param_names is None:
            return qmark(query)
        # (django-stubs do not declare convert_query)
        return str(super().convert_query(query, param_names=param_names))  # type: ignore[misc]


class DatabaseWrapper(base.DatabaseWrapper):
    """Django's SQLite connection, handing out SQLiteCursorWrapper cursors, with the
    search-text SQL function registered."""

    def get_new_connection(self, conn_params: Any) -> Any:
        conn = super().get_new_connection(conn_params)
        conn.create_function(SQLITE_FUNCTION, 1, sqlite_search_text, deterministic=True)
        return conn

    def create_cursor(self, name: Any = None) -> SQLiteCursorWrapper:
        return self.connection.cursor(factory=SQLiteCursorWrapper)
