"""Full-text search on PostgreSQL with FTS5's tokens and FTS5's bm25().

Each full-text "table" of the SQLite archive is here a pair (archive/pg_schema.py): ``T(rowid,
tokens)`` with a row per indexed record, and ``T_terms(term, rowid, col, tf)``, its postings. The
tokens come from FTS5's own tokenizers run in process (apsw, in memory): the word tables use
``porter unicode61 remove_diacritics 2``, the n-gram tables ``ascii``, exactly as in SQLite. So a
query finds the same rows on both backends, and the score below is FTS5's bm25 formula:

    idf(q)  = max(ln((N - n(q) + 0.5) / (n(q) + 0.5)), 1e-6)
    f(q, r) = sum over columns c of weight(c) * tf(q, r, c)
    score   = sum over q of idf(q) * f * (k1 + 1) / (f + k1 * (1 - b + b * tokens(r) / avgdl))

with k1 = 1.2, b = 0.75, N the rows of the table and avgdl their mean token count
(``fulltext_stats``). A query term ending in ``*`` (an n-gram prefix) matches every term it begins.
Forgetting deletes a record's row, and its postings go with it (ON DELETE CASCADE).
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

K1 = 1.2
B = 0.75
_LAST = "\U0010ffff"
# A term is a btree key: PostgreSQL refuses index rows over 2704 bytes. A longer token (a run of
# 100k emoji is one FTS5 token) is cut to its first MAX_TERM characters (4 bytes each at most), in
# documents and queries alike; before, recording such a text failed with an internal error.
MAX_TERM = 600
_TOKENIZERS = {"porter": ["unicode61", "remove_diacritics", "2"], "ascii": []}
_local = threading.local()


def _tokenizer(table: str) -> Any:
    name = "ascii" if table.endswith("_ngrams") else "porter"
    cache = getattr(_local, "tokenizers", None)
    if cache is None:
        import apsw

        conn = apsw.Connection(":memory:")
        cache = _local.tokenizers = {n: conn.fts5_tokenizer(n, args) for n, args in _TOKENIZERS.items()}
        _local.conn = conn
    return cache[name]


def tokens(table: str, text: str, *, query: bool = False) -> list[str]:
    """The terms FTS5 would index (or search, ``query``) for this text in that table."""
    import apsw

    if not text:
        return []
    reason = apsw.FTS5_TOKENIZE_QUERY if query else apsw.FTS5_TOKENIZE_DOCUMENT
    found = _tokenizer(table)(text.encode("utf-8"), reason, None, include_offsets=False, include_colocated=False)
    return [token[:MAX_TERM] for token in found if token]


def write(conn: Any, table: str, rowid: int, values: Sequence[str], *, delete: bool = False) -> None:
    """Index a record's column values under rowid, or (``delete``) remove its row and postings."""
    if delete:
        conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
        return
    counts: Counter[tuple[str, int]] = Counter()
    total = 0
    for column, value in enumerate(values):
        found = tokens(table, value)
        total += len(found)
        counts.update((term, column) for term in found)
    conn.execute(f"INSERT INTO {table} (rowid, tokens) VALUES (?, ?)", (rowid, total))
    if counts:
        conn.executemany(
            f"INSERT INTO {table}_terms (term, rowid, col, tf) VALUES (?, ?, ?, ?)",
            [(term, rowid, column, tf) for (term, column), tf in counts.items()],
        )


def clear(conn: Any, table: str) -> None:
    """Empty one full-text table (postings and statistics follow)."""
    conn.execute(f"DELETE FROM {table}")


def _ranges(table: str, words: Sequence[str]) -> list[tuple[int, str, str]]:
    """(word index, low, high) term ranges of the query words: one term each, or a prefix's range."""
    found = []
    for index, word in enumerate(words):
        prefix = word.endswith("*")
        for term in tokens(table, word.removesuffix("*"), query=True):
            found.append((index, term, term + _LAST if prefix else term))
    return found


def _any_term(ranges: Sequence[tuple[int, str, str]]) -> tuple[str, list[str]]:
    sql = " OR ".join("t.term BETWEEN ? AND ?" for _ in ranges)
    return f"({sql})", [bound for _, low, high in ranges for bound in (low, high)]


def count_matching(db: Any, table: str, word: str) -> int:
    """How many rows contain the word (any of its terms)."""
    ranges = _ranges(table, [word])
    if not ranges:
        return 0
    where, params = _any_term(ranges)
    return int(db.scalar(f"SELECT count(DISTINCT t.rowid) FROM {table}_terms t WHERE {where}", params) or 0)


def nth_newest(db: Any, table: str, words: Sequence[str], offset: int) -> int | None:
    """The rowid of the offset-th newest row containing any of the words (None when fewer)."""
    ranges = _ranges(table, words)
    if not ranges:
        return None
    where, params = _any_term(ranges)
    sql = f"SELECT DISTINCT t.rowid FROM {table}_terms t WHERE {where} ORDER BY t.rowid DESC LIMIT 1 OFFSET ?"
    value = db.scalar(sql, (*params, offset))
    return None if value is None else int(value)


def scored(
    db: Any,
    table: str,
    words: Sequence[str],
    weights: Sequence[float],
    counts: dict[str, int] | None = None,
    floor: int | None = None,
) -> tuple[str, dict[str, Any]]:
    """A subquery ``(rowid, score)`` of the rows matching any word, scored as FTS5's bm25 scores them.

    ``counts``: the rows containing each word (search.row_counts), else counted here; ``floor``:
    only rows with rowid >= floor are scored (the document frequencies stay the whole table's).
    Returns its SQL (with ``:ft_*`` parameters) and the parameters.
    """
    ranges = _ranges(table, words)
    stats = db.one("SELECT rows, tokens FROM fulltext_stats WHERE name = ?", (table,))
    rows = int(stats["rows"]) if stats else 0
    if not ranges or not stats or not rows:
        return "(SELECT NULL::bigint AS rowid, 0.0::float8 AS score WHERE false)", {}
    params: dict[str, Any] = {"ft_average": max(int(stats["tokens"]), 1) / rows, "ft_floor": floor}
    counts = counts or {}
    values = []
    for j, (index, low, high) in enumerate(ranges):
        word = words[index]
        n = counts[word] if word in counts else count_matching(db, table, word)
        values.append(f"(:ft_low{j}::text, :ft_high{j}::text, :ft_idf{j}::float8)")
        params |= {
            f"ft_low{j}": low,
            f"ft_high{j}": high,
            f"ft_idf{j}": max(math.log((rows - n + 0.5) / (n + 0.5)), 1e-6),
        }
    weight = "(ARRAY[" + ", ".join(f":ft_w{c}::float8" for c in range(len(weights))) + "])[t.col + 1]"
    params |= {f"ft_w{c}": w for c, w in enumerate(weights)}
    bound = "" if floor is None else " AND t.rowid >= :ft_floor"
    sql = (
        f"(WITH q(low, high, idf) AS (VALUES {', '.join(values)}),"
        f" p AS (SELECT t.rowid, q.idf, sum(t.tf * {weight}) AS f FROM q JOIN {table}_terms t"
        f"  ON t.term BETWEEN q.low AND q.high{bound} GROUP BY q.low, q.high, q.idf, t.rowid)"
        f" SELECT p.rowid, sum(p.idf * p.f * {K1 + 1} / (p.f + {K1} * ({1 - B} + {B} * d.tokens / :ft_average)))"
        f" AS score FROM p JOIN {table} d ON d.rowid = p.rowid GROUP BY p.rowid)"
    )
    return sql, params


def containing_all(table: str, column: int, text: str, most: int = 8) -> tuple[str, list[Any]]:
    """A subquery of the rowids whose column holds every one of the text's first ``most`` distinct
    terms (a superset of the rows holding the text as a phrase), and its parameters."""
    terms = list(dict.fromkeys(tokens(table, text, query=True)))[:most]
    marks = ", ".join("?" for _ in terms)
    sql = (
        f"SELECT rowid FROM {table}_terms WHERE col = ? AND term IN ({marks})"
        f" GROUP BY rowid HAVING count(*) = {len(terms)}"
    )
    return sql, [column, *terms]
