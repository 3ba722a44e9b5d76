"""The words full-text search sees: one reading of apostrophes for queries and indexes.

An apostrophe inside an English word starts a clitic, not a new word: "user's", "it's",
"don't", "we're", "I've", "she'll", "I'd", "I'm". SQLite's FTS5 tokenizer (unicode61) and
PostgreSQL's parser both split there, so "user's" was "user" + "s" and "don't" "don" +
"t". PostgreSQL's 'english' configuration drops "s" and "t" as stop words; FTS5 kept
them, and so did the query's words (\\w+): a question with a possessive searched for "s",
which every message with a possessive or a contraction matched.

``search_text`` reads the clitics before either engine or the query splitter sees the
text: a possessive or contracted 's, 're, 've, 'll, 'd, 'm after a letter or digit is
dropped ("user's" -> "user", "it's" -> "it", "90's" -> "90": "is", "has", "are" and the
like are stop words anyway), and n't is " not" ("don't" -> "do not", "can't" -> "can
not", "won't" -> "will not"). Typographic apostrophes (U+2019, U+02BC) count as the plain
one; an apostrophe that starts no clitic ("O'Brien", "rock'n'roll") is left to the
engine. Used by the query's words (memoryapp.message_search.query_words, on every engine)
and by SQLite's full-text indexes (the SQL function SQLITE_FUNCTION, registered on every
connection by memoryapp.sqlite_backend; migration 0021), so the index and the query read
a word alike. PostgreSQL's stored vectors keep its parser's split, whose "s" and "t" its
stop words drop (docs/decisions.md, "Apostrophes in search").
"""

from __future__ import annotations

import re

#: The SQL function name of search_text on SQLite connections (migration 0021's views and
#: triggers call it).
SQLITE_FUNCTION = "memoryapp_search_text"

_APOSTROPHE = "['\u2019\u02bc]"
_CLITIC = re.compile(rf"(?<=\w){_APOSTROPHE}(?:s|re|ve|ll|d|m)\b", re.IGNORECASE)
_NEGATION = re.compile(rf"\b(\w+?)n{_APOSTROPHE}t\b", re.IGNORECASE)
# Negations whose stem is not the verb as written: "can't", "won't", "shan't", "ain't".
_IRREGULAR = {"ca": "can", "wo": "will", "sha": "shall", "ai": "is"}


def _negation(match: re.Match[str]) -> str:
    stem = match.group(1)
    return f"{_IRREGULAR.get(stem.lower(), stem)} not"


def search_text(text: str) -> str:
    """``text`` with English clitics read (module doc): "The user's sister doesn't ski"
    -> "The user sister does not ski". Same length or longer; nothing else changes."""
    if "'" not in text and "\u2019" not in text and "\u02bc" not in text:
        return text
    return _CLITIC.sub("", _NEGATION.sub(_negation, text))


def sqlite_search_text(text: object) -> object:
    """search_text as SQLite's SQL function: NULL and non-text values pass unchanged."""
    return search_text(text) if isinstance(text, str) else text
