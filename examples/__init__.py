"""Runnable mast-otel examples; importable (``examples.ag2_group_chat.run()``) so tests and demos reuse them."""
