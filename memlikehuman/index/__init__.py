"""Vectors: the cache, the background indexer and rebuilding the derived indexes."""
