"""Scale-out: a collector run as several processes: the front that routes each trace to its shard process, the shards,
the link between them, and one merged /metrics.
"""
