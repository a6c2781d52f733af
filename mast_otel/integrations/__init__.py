"""One module per framework. Each maps the framework's events onto ``mast_otel.recorder`` and nothing else."""
