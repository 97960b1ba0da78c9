"""Read-only search and recall: queries, scoring as pure functions, dates, phrasings, overviews."""
