"""Operator functions: stats, doctor, export/import, history import."""
