"""The user's own mapping: a span schema no built-in reader knows, read with no code.

A mapping names, for the spans of one instrumentation, which spans are an agent's run, a model call, a tool run or
a transfer of control, and which attributes carry the agent's name, the input, the output, the tool and a
transfer's target. It is a translator like the built-in ones (:mod:`.ai_sdk`): each span is given the GenAI
attributes its own say (never overwriting one it carries), and the GenAI reader (:mod:`.genai`) reconstructs the
run, with every rule it has. The collector reads mappings from ``--span-mapping FILE`` (YAML), ``mast-otel judge``
too; docs/adapters.md shows one for VoltAgent.

A span is matched against the kinds in this order: transfer, tool, model, agent (the most specific first: a
framework often copies its agent's attributes onto the agent's model and tool spans). A kind matches when the span
carries every attribute of its ``when`` with that value (``"*"``: any value). Attribute values are read in any
message shape (:mod:`._messages`): plain text, a message list, a single message.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mast_otel import semconv as sc
from mast_otel.spans import SpanRecord

from . import genai
from ._conversation import Adapted, NotAConversation
from ._evidence import name_or_none
from ._messages import dumps, genai_messages
from ._tree import Tree, text

__all__ = ["KINDS", "MappingError", "SpanKind", "SpanMapping", "load_mappings", "parse_mappings"]

# The kinds, in the order a span is matched against them, and the fields each may give.
KINDS: dict[str, tuple[str, ...]] = {
    "transfer": ("target", "reason"),
    "tool": ("name", "arguments", "result", "call_id"),
    "model": ("name", "input", "output"),
    "agent": ("name", "input", "output"),
}
ANY = "*"  # a ``when`` value: the attribute is there, whatever its value
# A transfer is written as the transfer tool every reader knows, its target and reason as that tool's arguments.
_TRANSFER_TOOL = "transfer_to_agent"


class MappingError(ValueError):
    """A mapping file the collector cannot use: the message names the mapping, the key and what is wrong."""


@dataclass(frozen=True, slots=True)
class SpanKind:
    """One kind of span in the user's schema: what marks it (``when``) and where each of its facts is (the first
    attribute listed that the span carries)."""

    when: Mapping[str, str]
    fields: Mapping[str, tuple[str, ...]]

    def matches(self, get: Callable[[str], Any]) -> bool:
        for key, wanted in self.when.items():
            value = get(key)
            if value is None or (wanted != ANY and text(value) != wanted):
                return False
        return True

    def read(self, span: SpanRecord, field: str) -> Any:
        return next((span.attributes[k] for k in self.fields.get(field, ()) if k in span.attributes), None)


@dataclass(frozen=True, slots=True)
class SpanMapping:
    """One instrumentation's spans read through the user's mapping."""

    name: str
    scope: str | None  # the instrumentation scope its spans come from; None: any scope
    framework: str | None  # None: named from the scope, as any instrumentation's
    kinds: tuple[tuple[str, SpanKind], ...]  # in matching order

    @property
    def source(self) -> str:
        """``mast.source`` of the conversations it reads."""
        return f"mapping:{self.name}"

    @property
    def root_keys(self) -> tuple[str, ...]:
        """The attribute keys that mark an agent's run (ingest's fast path: a span without one is no root)."""
        return tuple(key for kind, spec in self.kinds if kind == "agent" for key in spec.when)

    def kind_of(self, get: Callable[[str], Any], scope: str | None) -> str | None:
        if self.scope is not None and scope != self.scope:
            return None
        return next((kind for kind, spec in self.kinds if spec.matches(get)), None)

    def recognises(self, span: SpanRecord) -> bool:
        return self.kind_of(span.get, span.scope_name) is not None

    def is_root(self, span: SpanRecord) -> bool:
        return self.kind_of(span.get, span.scope_name) == "agent"

    def translate(self, span: SpanRecord) -> SpanRecord:
        """The span with the GenAI attributes its own say (those it already carries are kept as they are)."""
        kind = self.kind_of(span.get, span.scope_name)
        if kind is None:
            return span
        spec = dict(self.kinds)[kind]
        found: dict[str, Any] = {}
        if kind in ("agent", "model"):
            found[sc.GEN_AI_OPERATION_NAME] = sc.OP_INVOKE_AGENT if kind == "agent" else sc.OP_CHAT
            found[sc.GEN_AI_AGENT_NAME] = name_or_none(spec.read(span, "name"))
            given, answer = spec.read(span, "input"), spec.read(span, "output")
            found[sc.GEN_AI_INPUT_MESSAGES] = dumps(genai_messages(given, "user")) if given is not None else None
            found[sc.GEN_AI_OUTPUT_MESSAGES] = dumps(genai_messages(answer)) if answer is not None else None
        elif kind == "tool":
            found[sc.GEN_AI_OPERATION_NAME] = sc.OP_EXECUTE_TOOL
            found[sc.GEN_AI_TOOL_NAME] = text(spec.read(span, "name")) or span.name
            found[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = _text_of(spec.read(span, "arguments"))
            found[sc.GEN_AI_TOOL_CALL_RESULT] = _text_of(spec.read(span, "result"))
            found[sc.GEN_AI_TOOL_CALL_ID] = _text_of(spec.read(span, "call_id"))
        else:  # a transfer: the transfer tool every reader knows, its target and reason as its arguments
            found[sc.GEN_AI_OPERATION_NAME] = sc.OP_EXECUTE_TOOL
            found[sc.GEN_AI_TOOL_NAME] = _TRANSFER_TOOL
            arguments = {"agent_name": text(spec.read(span, "target")), "reason": text(spec.read(span, "reason"))}
            found[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = json.dumps({k: v for k, v in arguments.items() if v})
        added = {k: v for k, v in found.items() if v is not None and k not in span.attributes}
        return dataclasses.replace(span, attributes={**span.attributes, **added}) if added else span

    def adapt(self, tree: Tree, root: SpanRecord) -> Adapted | NotAConversation:
        return genai.read_translated(tree, root, self.translate, self.source, self.framework)


def _text_of(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


# --- the file ----------------------------------------------------------------------------------------------------


def load_mappings(path: Path) -> tuple[SpanMapping, ...]:
    """The mappings of a YAML (or JSON) file: ``{"mappings": [...]}``. Raises :class:`MappingError`."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise MappingError(f"span mapping {path}: cannot read it: {exc}") from None
    return parse_mappings(data, str(path))


def parse_mappings(data: Any, where: str = "span mapping") -> tuple[SpanMapping, ...]:
    """Mappings from decoded YAML/JSON, every key checked: an unknown key, a kind with no ``when`` or a field that
    is not an attribute name (or a list of them) is refused with the place it is at."""
    if not isinstance(data, dict) or set(data) != {"mappings"} or not isinstance(data["mappings"], list):
        raise MappingError(f"{where}: expected a 'mappings:' list and nothing else")
    found = [_mapping(item, f"{where}: mappings[{n}]") for n, item in enumerate(data["mappings"])]
    names = [m.name for m in found]
    if len(set(names)) != len(names):
        raise MappingError(f"{where}: two mappings share a name: {sorted({n for n in names if names.count(n) > 1})}")
    return tuple(found)


def _mapping(item: Any, where: str) -> SpanMapping:
    if not isinstance(item, dict):
        raise MappingError(f"{where}: expected a mapping of keys")
    unknown = set(item) - {"name", "scope", "framework", *KINDS}
    if unknown:
        raise MappingError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: name, scope, framework, "
                           f"{', '.join(KINDS)}")  # fmt: skip
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        raise MappingError(f"{where}: 'name' must name the mapping")
    for key in ("scope", "framework"):
        if item.get(key) is not None and not isinstance(item[key], str):
            raise MappingError(f"{where}.{key}: expected text")
    kinds = tuple((kind, _kind(item[kind], kind, f"{where}.{kind}")) for kind in KINDS if kind in item)
    if not any(kind == "agent" for kind, _ in kinds):
        raise MappingError(f"{where}: an 'agent' kind is needed: a run is rooted in an agent's run")
    return SpanMapping(name.strip(), item.get("scope"), item.get("framework"), kinds)


def _kind(item: Any, kind: str, where: str) -> SpanKind:
    if not isinstance(item, dict):
        raise MappingError(f"{where}: expected a mapping of keys")
    allowed = KINDS[kind]
    unknown = set(item) - {"when", *allowed}
    if unknown:
        raise MappingError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: when, {', '.join(allowed)}")
    when = item.get("when")
    if not isinstance(when, dict) or not when or not all(isinstance(k, str) and k for k in when):
        raise MappingError(f"{where}.when: expected attribute: value pairs ('*': any value), at least one")
    fields = {key: _attributes(item[key], f"{where}.{key}") for key in allowed if key in item}
    return SpanKind({k: text(v) for k, v in when.items()}, fields)


def _attributes(value: Any, where: str) -> tuple[str, ...]:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n.strip() for n in names):
        raise MappingError(f"{where}: expected an attribute name or a list of them")
    return tuple(n.strip() for n in names)


# (source, recognises a span, is a root, reads the run): one entry of the adapters' list
Reader = tuple[str, Callable[[SpanRecord], bool], Callable[[SpanRecord], bool],
               Callable[[Tree, SpanRecord], Adapted | NotAConversation]]  # fmt: skip


def readers(mappings: Sequence[SpanMapping]) -> list[Reader]:
    """The mappings as the adapters' (source, recognises, is_root, adapt) entries, tried before the built-ins."""
    return [(m.source, m.recognises, m.is_root, m.adapt) for m in mappings]
