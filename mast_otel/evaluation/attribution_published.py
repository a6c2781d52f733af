"""Published who-and-when figures on Who&When, with their sources, for the eval report to print beside ours.

They are the authors' numbers, not measured here. The study's own scorer (``Automated_FA/evaluate.py`` in
mingyin1/Agents_Failure_Attribution) counts a step as right when the reference is a *substring* of the
prediction (``actual_step in predicted_step`` on strings: a predicted "10" or "21" is right for a reference
"1"), and an agent when the reference name is a substring of the predicted one; figures computed with it are
inflated against exact integer comparison, which is what ``mast-otel eval --attribution`` reports (it prints the
study scorer's figure for its own methods too, marked, so the two can be compared).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PUBLISHED", "Published", "published_table"]

WHO_AND_WHEN = "Zhang et al., Which Agent Causes Task Failures and When?, ICML 2025, arXiv 2505.00212 (main results)"
AGENTRACER = "Zhang et al., AgenTracer: Who Is Inducing Failure in the LLM Agentic Systems?, arXiv 2509.03312"
A2P = ("West et al., Abduct, Act, Predict: Scaffolding Causal Inference for Automated Failure Attribution, "
       "arXiv 2509.10401")
STUDY_SCORER = "the authors, with the study's scorer (steps by substring: inflated)"
AS_REPORTED = "the authors (how steps were compared not checked here)"


@dataclass(frozen=True, slots=True)
class Published:
    method: str
    subset: str  # algorithm-generated / hand-crafted
    agent: float | None  # accuracy, 0..1; None: not reported
    step: float | None
    setting: str
    computed_by: str
    source: str


PUBLISHED: tuple[Published, ...] = (
    Published("all-at-once, GPT-4o", "algorithm-generated", 0.543, 0.125, "with ground truth", STUDY_SCORER,
              WHO_AND_WHEN),
    Published("all-at-once, GPT-4o", "hand-crafted", 0.552, 0.053, "with ground truth", STUDY_SCORER, WHO_AND_WHEN),
    Published("AgenTracer-8B", "hand-crafted", 0.691, 0.207, "with ground truth", AS_REPORTED, AGENTRACER),
    Published("A2P scaffolding", "algorithm-generated", None, 0.475, "", AS_REPORTED, A2P),
    Published("A2P scaffolding", "hand-crafted", None, 0.293, "", AS_REPORTED, A2P),
)  # fmt: skip


def published_table() -> list[str]:
    """The figures as Markdown lines: one row each, with who computed it and the source."""

    def f(x: float | None) -> str:
        return "-" if x is None else f"{x:.1%}"

    lines = [
        "| published method | subset | agent | step | setting | computed by | source |",
        "|---|---|---:|---:|---|---|---|",
    ]
    for p in PUBLISHED:
        lines.append(f"| {p.method} | {p.subset} | {f(p.agent)} | {f(p.step)} | {p.setting or '-'} | "
                     f"{p.computed_by} | {p.source} |")  # fmt: skip
    return lines
