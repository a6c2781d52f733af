"""CrewAI crews the tests run for real, against the project's scripted OpenAI-compatible server.

The hierarchical crew is the example's (examples/crewai_hierarchical.py). A sequential crew passes the
researcher's output to the writer as context; a looping agent runs out of ``max_iter``.
"""

from __future__ import annotations

from typing import Any

from crewai import LLM, Agent, Crew, Process, Task
from crewai.tools import tool

from examples import crewai_hierarchical as hierarchical_example

SEQUENTIAL_SCRIPT: dict[str, Any] = {
    "rules": [
        {"match": "ROLE_RESEARCHER", "replies": [{"tool": "lookup", "args": {"query": "Freedonia GDP"}},
                                                 "Freedonia's GDP is about 42 billion."]},
        {"match": "ROLE_WRITER", "replies": ["Report: Freedonia's GDP is about 42 billion."]},
        {"match": "ROLE_EDITOR", "replies": ["Edited: GDP about 42 billion."]},
    ],
    "default": "ok",
}  # fmt: skip
FORCED = "MUST give your absolute best final answer"  # CrewAI's prompt once an agent has used up max_iter
LOOP_SCRIPT: dict[str, Any] = {  # the agent never stops looking things up, until CrewAI forces an answer
    "rules": [
        {"match": FORCED, "replies": ["Thought: I must stop.\nFinal Answer: about 42, unverified."]},
        {"match": "LOOKUP_FOREVER", "replies": [{"tool": "lookup", "args": {"query": "more"}}]},
    ],
}


@tool("lookup")
def lookup(query: str) -> str:
    """Look a figure up."""
    return f"{query}: about 42 billion (estimate)"


def llm(base_url: str) -> Any:
    return LLM(model="openai/scripted", base_url=base_url, api_key="unused")


def sequential(base_url: str) -> Crew:
    """Researcher (with a tool) -> Writer (takes the research as context) -> Editor (implicit context)."""
    researcher = Agent(role="Researcher", goal="Find facts", backstory="ROLE_RESEARCHER", llm=llm(base_url),
                       tools=[lookup], allow_delegation=False)  # fmt: skip
    writer = Agent(role="Writer", goal="Write", backstory="ROLE_WRITER", llm=llm(base_url), allow_delegation=False)
    editor = Agent(role="Editor", goal="Edit", backstory="ROLE_EDITOR", llm=llm(base_url), allow_delegation=False)
    research = Task(description="Find the GDP of Freedonia", expected_output="a number", agent=researcher)
    report = Task(description="Write a one-line report", expected_output="one line", agent=writer, context=[research])
    edit = Task(description="Edit the report", expected_output="one line", agent=editor)
    return Crew(agents=[researcher, writer, editor], tasks=[research, report, edit], process=Process.sequential)


def hierarchical(base_url: str) -> Crew:
    return hierarchical_example.build(base_url)


def looping(base_url: str) -> Crew:
    researcher = Agent(role="Researcher", goal="Find facts", backstory="A researcher.", llm=llm(base_url),
                       tools=[lookup], allow_delegation=False, max_iter=2)  # fmt: skip
    task = Task(description="LOOKUP_FOREVER: find the GDP of Freedonia", expected_output="a number", agent=researcher)
    return Crew(agents=[researcher], tasks=[task], process=Process.sequential)
