// What every JavaScript recorder shares: an in-memory tracer provider, the finished spans as OTLP JSON (the shape
// tests/captures/_record.py's otlp_json writes: protobuf's JSON mapping of an ExportTraceServiceRequest, ids in
// hex, 64-bit integers as strings, enums by name, defaults left out), and the one line a recorder prints.
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

export function inMemoryProvider() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { exporter, provider };
}

const KINDS = ["SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER"];
const STATUS = ["STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"];

function anyValue(value) {
  if (typeof value === "string") return { stringValue: value };
  if (typeof value === "boolean") return { boolValue: value };
  if (typeof value === "number") return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  if (typeof value === "bigint") return { intValue: String(value) };
  if (Array.isArray(value)) return { arrayValue: value.length ? { values: value.map(anyValue) } : {} };
  if (value && typeof value === "object") {
    return { kvlistValue: { values: Object.entries(value).map(([key, v]) => ({ key, value: anyValue(v) })) } };
  }
  return {};
}

function attributes(attrs) {
  return Object.entries(attrs || {})
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([key, v]) => ({ key, value: anyValue(v) }));
}

function nanos([seconds, nanoseconds]) {
  return (BigInt(seconds) * 1000000000n + BigInt(nanoseconds)).toString();
}

function span(s) {
  const context = s.spanContext();
  const parent = s.parentSpanContext ?? (s.parentSpanId ? { spanId: s.parentSpanId } : undefined);
  const out = { traceId: context.traceId, spanId: context.spanId };
  if (parent?.spanId) out.parentSpanId = parent.spanId;
  out.name = s.name;
  out.kind = KINDS[s.kind ?? 0];
  out.startTimeUnixNano = nanos(s.startTime);
  out.endTimeUnixNano = nanos(s.endTime);
  const attrs = attributes(s.attributes);
  if (attrs.length) out.attributes = attrs;
  if (s.droppedAttributesCount) out.droppedAttributesCount = s.droppedAttributesCount;
  if (s.events?.length) {
    out.events = s.events.map((e) => {
      const event = { timeUnixNano: nanos(e.time), name: e.name };
      const eventAttrs = attributes(e.attributes);
      if (eventAttrs.length) event.attributes = eventAttrs;
      return event;
    });
  }
  if (s.links?.length) {
    out.links = s.links.map((l) => {
      const link = { traceId: l.context.traceId, spanId: l.context.spanId };
      const linkAttrs = attributes(l.attributes);
      if (linkAttrs.length) link.attributes = linkAttrs;
      return link;
    });
  }
  const status = {};
  if (s.status?.code) status.code = STATUS[s.status.code];
  if (s.status?.message) status.message = s.status.message;
  out.status = status;
  out.flags = parent?.isRemote ? 768 : 256; // the spec's SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE (and IS_REMOTE)
  return out;
}

/** The finished spans as an ExportTraceServiceRequest in OTLP JSON, grouped by resource, then by scope. */
export function otlpJson(spans) {
  const resources = new Map();
  for (const s of spans) {
    if (!resources.has(s.resource)) resources.set(s.resource, new Map());
    const scopes = resources.get(s.resource);
    const scope = s.instrumentationScope ?? s.instrumentationLibrary;
    const key = `${scope.name}\u0000${scope.version ?? ""}`;
    if (!scopes.has(key)) scopes.set(key, { scope, spans: [] });
    scopes.get(key).spans.push(span(s));
  }
  return {
    resourceSpans: [...resources].map(([resource, scopes]) => ({
      resource: { attributes: attributes(resource.attributes) },
      scopeSpans: [...scopes.values()].map(({ scope, spans: list }) => ({
        scope: scope.version ? { name: scope.name, version: scope.version } : { name: scope.name },
        spans: list,
      })),
    })),
  };
}

/** The scripted server's base URL, from the command line. */
export function baseUrl() {
  const url = process.argv[2];
  if (!url) {
    console.error("usage: node RECORDER.mjs BASE_URL RUN");
    process.exit(2);
  }
  return url;
}

/** One JSON line on stdout: what record_js.py reads (settings, the expectation, the OTLP JSON). */
export function emit(record) {
  process.stdout.write(JSON.stringify(record) + "\n");
}
