"""The judge's answer format: a pydantic model to validate it and a JSON Schema to constrain it.

Same information as the original MAST judge (summary, task completed, yes/no per mode) plus what it lacked:
evidence references and a one-line reason per mode. The modes are an object keyed by id, so a schema-constrained
decoder must produce all 14 and nothing the taxonomy does not have; validation enforces the same on servers that
cannot constrain. Lenient where leniency cannot change meaning ("yes" for true, one reference instead of a list,
"[M3]" for "M3"); strict where it could (a missing mode is invalid, never read as "absent").
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mast_otel.taxonomy import MODE_IDS

__all__ = ["DecisiveAnswer", "JudgeOutput", "ModeAssessment", "OutputError", "json_schema", "parse_output"]

_REF = re.compile(r"^\[?\s*([A-Za-z]+\d*)\s*\]?$")


class OutputError(ValueError):
    """The model's text is not a valid answer; the message says why (it is fed back on the retry)."""


class ModeAssessment(BaseModel):
    model_config = ConfigDict(extra="ignore")

    evidence: list[str] = Field(default_factory=list)
    reason: str = ""
    present: bool

    @field_validator("evidence", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str):
            return [v for v in re.split(r"[,\s]+", value) if v]
        return value

    def refs(self) -> list[str]:
        """Evidence as bare references ("[M3]" -> "M3"); anything not shaped like a reference is kept as is."""
        out = []
        for item in self.evidence:
            m = _REF.match(item.strip())
            out.append(m.group(1).upper() if m else item.strip())
        return out


class DecisiveAnswer(BaseModel):
    """Who and when: the message where the failure became inevitable, its sender, and why (one line)."""

    model_config = ConfigDict(extra="ignore")

    message: str
    agent: str
    reason: str = ""

    def ref(self) -> str:
        m = _REF.match(self.message.strip())
        return m.group(1).upper() if m else self.message.strip()


class JudgeOutput(BaseModel):
    model_config = ConfigDict(extra="ignore")

    summary: str
    task_completed: bool
    modes: dict[str, ModeAssessment]
    decisive: DecisiveAnswer | None = None  # null when nothing failed

    def check_decisive(self, message_refs: Mapping[str, str], speakers: Collection[str]) -> None:
        """Raise :class:`OutputError` unless the decisive step cites a message of this transcript sent by an agent
        that spoke in it (never guessed: an invalid one is re-asked, then the verdict is an error)."""
        if self.decisive is None:
            return
        ref = self.decisive.ref()
        if ref not in message_refs:
            raise OutputError(f"decisive.message {self.decisive.message!r} is not a message reference (M...) of "
                              "this transcript")  # fmt: skip
        if self.decisive.agent not in speakers:
            raise OutputError(f"decisive.agent {self.decisive.agent!r} never sent a message in this transcript")

    @field_validator("modes")
    @classmethod
    def _all_modes(cls, value: dict[str, ModeAssessment]) -> dict[str, ModeAssessment]:
        missing = [m for m in MODE_IDS if m not in value]
        if missing:
            raise ValueError(f"modes is missing {', '.join(missing)}; all 14 ids are required")
        return {m: value[m] for m in MODE_IDS}  # ids the taxonomy lacks (e.g. "1.6") are dropped

    def present(self) -> list[str]:
        return [m for m, a in self.modes.items() if a.present]


def json_schema(*, reason_max_chars: int | None = None, max_evidence: int | None = None) -> dict[str, Any]:
    """The answer schema, fully inlined (no ``$ref``: some servers' grammar converters do not follow them).

    The optional bounds keep a grammar-constrained small model from rambling until it runs out of tokens.
    """
    reason: dict[str, Any] = {"type": "string"}
    if reason_max_chars:
        reason["maxLength"] = reason_max_chars
    evidence: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
    if max_evidence is not None:
        evidence["maxItems"] = max_evidence
    entry = {
        "type": "object",
        "properties": {"evidence": evidence, "reason": reason, "present": {"type": "boolean"}},
        "required": ["evidence", "reason", "present"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "summary": {"type": "string"},
            "task_completed": {"type": "boolean"},
            "modes": {
                "type": "object",
                "properties": {m: entry for m in MODE_IDS},
                "required": list(MODE_IDS),
                "additionalProperties": False,
            },
            "decisive": {
                "anyOf": [
                    {"type": "null"},
                    {
                        "type": "object",
                        "properties": {"message": {"type": "string"}, "agent": {"type": "string"}, "reason": reason},
                        "required": ["message", "agent", "reason"],
                        "additionalProperties": False,
                    },
                ]
            },
        },
        "required": ["summary", "task_completed", "modes", "decisive"],
        "additionalProperties": False,
    }


def schema_hint() -> str:
    """A compact, human-readable form of the schema for the prompt (the full one goes in response_format)."""
    entry = '{"evidence": ["M3", "H1"], "reason": "<one line>", "present": true|false}'
    ids = ", ".join(f'"{m}": {{...}}' for m in MODE_IDS)
    return (
        '{"summary": "<one sentence>", "task_completed": true|false, "modes": {' + ids + "}, "
        '"decisive": {"message": "M7", "agent": "<its sender>", "reason": "<one line>"} | null}\n'
        f"where every {{...}} is {entry}; all 14 ids are required, no other keys."
    )


def parse_output(text: str) -> JudgeOutput:
    """Find and validate the JSON answer in ``text`` (bare, fenced, or surrounded by prose)."""
    if not text or not text.strip():
        raise OutputError("the answer was empty")
    errors: list[str] = []
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if not isinstance(obj, dict) or "modes" not in obj:
            continue
        try:
            return JudgeOutput.model_validate(obj)
        except ValidationError as exc:
            errors.append("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5]))
    if errors:
        raise OutputError(f"the JSON does not match the schema: {errors[0]}")
    raise OutputError("no JSON object with a 'modes' key was found")
