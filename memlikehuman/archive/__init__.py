"""The archive: the schema and the only modules that write tables.

events, memories (and the timeline of their versions), checkpoints, personas, the full-text rows,
extraction claims and event dates; db.py opens the file, migrations.py holds the schema history.
"""
