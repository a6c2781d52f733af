"""Store: the SQLite store (WAL) that holds every span and log record from its acknowledgement until it is delivered,
with its outbox, tombstones, verdict journal and disk reserve.
"""
