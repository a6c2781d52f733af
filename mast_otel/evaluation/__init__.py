"""Evaluation: how well the judge does, and judging recorded files offline. The top layer of mast-otel.

Above the judge, because it runs what the judge must not know: the integrations (the constructed-case suite runs
real AG2 and MetaGPT teams), the replay (step lists and Who&When runs become spans through the real recorder),
and the readers of other datasets' formats (MAD, step lists, OTLP JSON). It scores verdicts against reference
labels (``metrics``), draws the charts, and holds the two offline commands, ``mast-otel judge FILE``
(:mod:`.judge_cli`) and ``mast-otel eval`` (:mod:`.eval_cli`). Nothing below imports it (docs/development.md).
"""
