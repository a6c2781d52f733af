"""Release and export: a judged conversation's labels written onto its spans, the release committed with its tombstone,
and the OTLP exporter that delivers the outbox downstream.
"""
