"""Assemble: which spans make one conversation, and when it is whole (quiet period, max age), from the ids ingest
records.
"""
