"""Receive: the OTLP receivers (gRPC, HTTP; traces and logs), their auth, and ingest, which checks a request, stores it
before the answer and tells the assembler.
"""
