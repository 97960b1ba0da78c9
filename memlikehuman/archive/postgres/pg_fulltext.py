"""Full-text search on PostgreSQL with FTS5's tokens and FTS5's bm25().

Each full-text "table" of the SQLite archive is here a pair (archive/postgres/pg_schema.py): ``T(rowid,
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

import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..connection import Connection, Transaction

K1 = 1.2
# A statement holding this comment is planned with its values on every call, never prepared
# (pg.PgConnection.execute): the best plan of a full-text query depends on its terms.
PLAN_PER_CALL = "/* plan per call */"
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


def postings(table: str, values: Sequence[str]) -> tuple[int, list[tuple[str, int, int]]]:
    """A record's row in that table: its token count, and its postings (term, column, count)."""
    counts: Counter[tuple[str, int]] = Counter()
    total = 0
    for column, value in enumerate(values):
        found = tokens(table, value)
        total += len(found)
        counts.update((term, column) for term in found)
    return total, [(term, column, tf) for (term, column), tf in counts.items()]


def write(conn: Transaction, table: str, rowid: int, values: Sequence[str], *, delete: bool = False) -> None:
    """Index a record's column values under rowid, or (``delete``) remove its row and postings."""
    if delete:
        conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
        return
    total, found = postings(table, values)
    if not found:
        conn.execute(f"INSERT INTO {table} (rowid, tokens) VALUES (?, ?)", (rowid, total))
        return
    # One statement, one round trip: the row, then its postings from three arrays (the foreign key
    # is checked at the end of the statement, when the row is there).
    terms, columns, tfs = zip(*found, strict=True)
    conn.execute(
        f"WITH d AS (INSERT INTO {table} (rowid, tokens) VALUES (?, ?))"
        f" INSERT INTO {table}_terms (term, rowid, col, tf)"
        " SELECT u.term, ?, u.col, u.tf FROM unnest(?::text[], ?::smallint[], ?::integer[]) AS u(term, col, tf)",
        (rowid, total, rowid, list(terms), list(columns), list(tfs)),
    )


def clear(conn: Transaction, table: str) -> None:
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


def _term_select(table: str, j: int, low: str, high: str, weight: str, floor: int | None) -> str:
    """The postings of query term j (parameters ft{j}_low/_high; ft{j}_rows: the rows holding it) summed per row.

    A term is matched by equality, so the planner reads that term's own frequency; a prefix (an
    n-gram ``x*``) by its range. The rowid bound of an equality is a row comparison on the
    primary key (term, rowid, col), one range of that index: as ``t.rowid >= floor`` the planner
    preferred the rowid index and filtered the whole newest tail by term.
    """
    if low == high:
        match = f"t.term = :ft{j}_low" + ("" if floor is None else f" AND (t.term, t.rowid) >= (:ft{j}_low, :ft_floor)")
    else:
        match = f"t.term BETWEEN :ft{j}_low AND :ft{j}_high" + ("" if floor is None else " AND t.rowid >= :ft_floor")
    return (
        f"SELECT t.rowid, :ft{j}_rows::float8 AS df, sum(t.tf * {weight}) AS f FROM {table}_terms t"
        f" WHERE {match} GROUP BY t.rowid"
    )


def _any_term(ranges: Sequence[tuple[int, str, str]]) -> tuple[str, list[str]]:
    """A condition on t.term matching any of the terms (OR), and its parameters in order."""
    parts, params = [], []
    for _, low, high in ranges:
        parts.append("t.term = ?" if low == high else "t.term BETWEEN ? AND ?")
        params += [low] if low == high else [low, high]
    return " OR ".join(parts), params


def count_matching(db: Connection, table: str, word: str) -> int:
    """How many rows contain the word (any of its terms)."""
    ranges = _ranges(table, [word])
    if not ranges:
        return 0
    where, params = _any_term(ranges)
    return int(db.scalar(f"SELECT count(DISTINCT t.rowid) FROM {table}_terms t WHERE {where}", params) or 0)


def nth_newest(db: Connection, table: str, words: Sequence[str], offset: int, span: tuple[int, int]) -> int | None:
    """The rowid of the offset-th newest row containing any of the words (None when fewer), among the rows
    whose rowid lies in `span` (both ends included).

    A row among the offset + 1 newest matches is among the offset + 1 newest of each of its terms,
    so each term contributes only those (read newest first from its index range), not all of a
    common word's postings.
    """
    ranges = _ranges(table, words)
    if not ranges:
        return None
    parts, params = [], []
    for _, low, high in ranges:
        where, bounds = _any_term([(0, low, high)])
        parts.append(
            f"(SELECT DISTINCT t.rowid FROM {table}_terms t WHERE {where} AND t.rowid BETWEEN ? AND ?"
            " ORDER BY t.rowid DESC LIMIT ?)"
        )
        params += [*bounds, *span, offset + 1]
    sql = (
        f"SELECT {PLAN_PER_CALL} DISTINCT u.rowid FROM ({' UNION ALL '.join(parts)}) u"
        " ORDER BY u.rowid DESC LIMIT 1 OFFSET ?"
    )
    value = db.scalar(sql, (*params, offset))
    return None if value is None else int(value)


def scored(
    db: Connection,
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

    Each term is its own SELECT (UNION ALL) with its value as a parameter: the planner then knows
    how many postings each term has (a common word's from the column statistics) and picks index
    scans and nested loops for the usual few thousand rows.
    """
    ranges = _ranges(table, words)
    if not ranges:
        return "(SELECT NULL::bigint AS rowid, 0.0::float8 AS score WHERE false)", {}
    weight = "(ARRAY[" + ", ".join(f":ft_w{c}::float8" for c in range(len(weights))) + "])[t.col + 1]"
    params: dict[str, Any] = {"ft_table": table, "ft_floor": floor}
    params |= {f"ft_w{c}": w for c, w in enumerate(weights)}
    counts = counts or {}
    parts = []
    for j, (index, low, high) in enumerate(ranges):
        word = words[index]
        parts.append(_term_select(table, j, low, high, weight, floor))
        params |= {
            f"ft{j}_low": low,
            f"ft{j}_high": high,
            f"ft{j}_rows": counts[word] if word in counts else count_matching(db, table, word),
        }
    # The table's statistics in the same statement (no round trip of their own); no row when the
    # table is empty. Each scored row's length by its primary key (OFFSET 0 keeps the lookup a
    # nested loop): the planner would hash the whole table for a couple of thousand rows.
    # A count is at most the rows there are: counts are cached (search.row_counts) while rows may be
    # forgotten meanwhile.
    df = "least(p.df, s.n)"
    idf = f"greatest(ln((s.n - {df} + 0.5) / ({df} + 0.5)), 1e-6)"
    length = f"({1 - B} + {B} * d.tokens / s.average)"
    sql = (
        f"({PLAN_PER_CALL} WITH p AS ({' UNION ALL '.join(parts)}),"
        " s AS (SELECT rows::float8 AS n, greatest(tokens, 1)::float8 / rows AS average FROM fulltext_stats"
        " WHERE name = :ft_table AND rows > 0)"
        f" SELECT p.rowid, sum({idf} * p.f * {K1 + 1} / (p.f + {K1} * {length})) AS score FROM p CROSS JOIN s"
        f" CROSS JOIN LATERAL (SELECT d.tokens FROM {table} d WHERE d.rowid = p.rowid OFFSET 0) d"
        " GROUP BY p.rowid)"
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
