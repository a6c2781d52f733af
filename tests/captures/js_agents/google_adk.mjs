// Google ADK for JavaScript (@google/adk), traced by its own OpenTelemetry telemetry as its setup gives it:
// maybeSetOtelProviders([{ spanProcessors }]) registers a NodeTracerProvider with the span processors it is handed
// (its own OTLP exporter when OTEL_EXPORTER_OTLP_ENDPOINT is set); here one exports to memory instead of a
// collector. ADK writes its spans under the tracer "gcp.vertex.agent" (invoke_agent, call_llm with the request and
// answer as gcp.vertex.agent.llm_request / llm_response, execute_tool); its content switch is
// ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS (default true; the run "desk-content-off" sets it to false).
//
//   node google_adk.mjs BASE_URL desk|desk-content-off|pipeline|solo
//
// The model: ADK for JavaScript ships Gemini (Google AI, Vertex AI) and Apigee models only, no OpenAI-compatible
// one and no LiteLLM; a model of another kind is a BaseLlm subclass (the extension point its models registry,
// LLMRegistry, is built on). OpenAIChat below is one: it sends ADK's request to the scripted server's chat
// completions and returns the answer as ADK's LlmResponse. ADK's spans are written by its flow around the model
// call, not by the model class, so nothing ADK traces depends on it but gen_ai.request.model.
//
// desk: triage (the root, with sub-agents researcher and writer) transfers to the researcher with ADK's
// transfer_to_agent tool; the researcher calls lookup_order and transfers to the writer (a peer), who answers.
// pipeline: a SequentialAgent runs the researcher (lookup_order, then its finding) and then the writer; the
// SequentialAgent itself never calls a model. solo: one agent with one tool, the control run. The expectation is
// read from ADK's own record, the events Runner.runAsync yields (each event's author, its content's parts: text,
// functionCall; actions.transferToAgent), never from a span.
import {
  BaseLlm, FunctionTool, InMemoryRunner, LlmAgent, SequentialAgent, maybeSetOtelProviders,
} from "@google/adk";
import { trace } from "@opentelemetry/api";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { z } from "zod";

import { baseUrl, emit, otlpJson } from "../js/otlp.mjs";

const TASK = "I was charged twice for order A17. Please refund the duplicate charge.";
const SWITCH = "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS";
const TRANSFER = "transfer_to_agent";
const url = baseUrl();
const run = process.argv[3];
if (run === "desk-content-off") process.env[SWITCH] = "false";

const exporter = new InMemorySpanExporter();
maybeSetOtelProviders([{ spanProcessors: [new SimpleSpanProcessor(exporter)] }]);

/** An OpenAI-compatible chat-completions model for ADK (not streamed): ADK's request (Gemini contents, the system
 * instruction, function declarations) as chat messages and tools, the answer as ADK's LlmResponse. */
class OpenAIChat extends BaseLlm {
  static supportedModels = [/^openai\/.*/];

  async *generateContentAsync(llmRequest) {
    const messages = [];
    const system = llmRequest.config?.systemInstruction;
    if (system) messages.push({ role: "system", content: typeof system === "string" ? system : partsText(system.parts) });
    for (const content of llmRequest.contents) messages.push(...chatMessages(content));
    const tools = (llmRequest.config?.tools ?? []).flatMap((t) => t.functionDeclarations ?? []).map((d) => ({
      type: "function",
      function: { name: d.name, description: d.description ?? "", parameters: d.parametersJsonSchema ?? jsonSchema(d.parameters) },
    }));
    const body = { model: this.model.replace(/^openai\//, ""), messages, ...(tools.length ? { tools } : {}) };
    const response = await fetch(`${url}/chat/completions`, {
      method: "POST", headers: { "content-type": "application/json", authorization: "Bearer unused" },
      body: JSON.stringify(body),
    });
    const answer = await response.json();
    const message = answer.choices[0].message;
    const parts = [];
    if (message.content) parts.push({ text: message.content });
    for (const call of message.tool_calls ?? []) {
      parts.push({ functionCall: { id: call.id, name: call.function.name, args: JSON.parse(call.function.arguments || "{}") } });
    }
    yield {
      content: { role: "model", parts },
      finishReason: "STOP",
      turnComplete: true,
      usageMetadata: { promptTokenCount: answer.usage.prompt_tokens, candidatesTokenCount: answer.usage.completion_tokens,
        totalTokenCount: answer.usage.total_tokens },
    };
  }

  async connect() {
    throw new Error("OpenAIChat: no live (bidirectional) connection");
  }
}

function partsText(parts) {
  return (parts ?? []).filter((p) => p.text).map((p) => p.text).join("\n");
}

/** One Gemini content as chat messages: text and function calls as the assistant's (role model) or the user's;
 * each function response as a tool message. */
function chatMessages(content) {
  const out = [];
  const text = partsText(content.parts);
  const calls = (content.parts ?? []).filter((p) => p.functionCall).map((p) => ({
    id: p.functionCall.id, type: "function",
    function: { name: p.functionCall.name, arguments: JSON.stringify(p.functionCall.args ?? {}) },
  }));
  if (content.role === "model") {
    if (text || calls.length) out.push({ role: "assistant", content: text || null, ...(calls.length ? { tool_calls: calls } : {}) });
  } else if (text) {
    out.push({ role: "user", content: text });
  }
  for (const part of content.parts ?? []) {
    if (part.functionResponse) {
      out.push({ role: "tool", tool_call_id: part.functionResponse.id, content: JSON.stringify(part.functionResponse.response) });
    }
  }
  return out;
}

/** A Gemini Schema (upper-case type names) as JSON Schema. */
function jsonSchema(schema) {
  if (!schema || typeof schema !== "object") return { type: "object", properties: {} };
  const out = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "type") out.type = String(value).toLowerCase();
    else if (key === "properties") out.properties = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonSchema(v)]));
    else if (key === "items") out.items = jsonSchema(value);
    else out[key] = value;
  }
  return out;
}

const model = () => new OpenAIChat({ model: "openai/gpt-4o" });
const lookupOrder = new FunctionTool({
  name: "lookup_order",
  description: "Look up an order's charges.",
  parameters: z.object({ order_id: z.string() }),
  execute: ({ order_id }) => `Order ${order_id}: charged 49.00 EUR twice on 2026-11-02.`,
});

/** The runner's events, as ADK yields them: its own record of the run. */
async function runEvents(agent) {
  const runner = new InMemoryRunner({ agent, appName: "desk" });
  const session = await runner.sessionService.createSession({ appName: "desk", userId: "customer" });
  const events = [];
  for await (const event of runner.runAsync({ userId: "customer", sessionId: session.id,
    newMessage: { role: "user", parts: [{ text: TASK }] } })) {
    events.push(event);
  }
  return events;
}

/** Speakers, tool calls and answers from the events: each model answer (content role "model") is its author's;
 * a transfer_to_agent call is ADK's handoff (actions.transferToAgent names the agent it hands to), not a tool
 * call; consecutive answers of different authors are a handoff. */
function expectation(events, multi) {
  const speakers = [];
  const tools = [];
  const transfers = [];
  const answers = [];
  for (const event of events) {
    if (event.actions?.transferToAgent) transfers.push([event.author, event.actions.transferToAgent]);
    if (event.content?.role !== "model" || event.partial) continue;
    const parts = event.content.parts ?? [];
    const calls = parts.filter((p) => p.functionCall).map((p) => p.functionCall.name);
    answers.push({ agent: event.author, text: partsText(parts), tools: calls });
    if (speakers.at(-1) !== event.author) speakers.push(event.author);
    for (const name of calls) if (name !== TRANSFER) tools.push([event.author, name]);
  }
  const handoffs = [];
  for (let i = 1; i < speakers.length; i += 1) handoffs.push([speakers[i - 1], speakers[i]]);
  const hidden = process.env[SWITCH] === "false" ? [SWITCH] : [];
  return {
    expect: { conversation: multi, task: TASK, agents: [...new Set(speakers)], handoffs, tool_calls: tools,
      messages: 1 + answers.length, said: answers.filter((a) => a.text).map((a) => [a.agent, a.text]), hidden },
    record: { answers, transfers },
  };
}

const SOURCE = "Runner.runAsync events (ADK's record of the run): each event's author and content parts (text, "
  + "functionCall) where the content's role is model (an answer); actions.transferToAgent (a transfer_to_agent "
  + "call is the handoff it records, not a tool call); the task as the runner's newMessage";

let result;
let settings;
if (run === "desk" || run === "desk-content-off") {
  const researcher = new LlmAgent({ name: "researcher", description: "Finds the facts of an order.", model: model(),
    instruction: "ROUTE_RESEARCHER. Look the order up, then transfer to the writer.", tools: [lookupOrder] });
  const writer = new LlmAgent({ name: "writer", description: "Writes to the customer.", model: model(),
    instruction: "ROLE_WRITER. Write the note." });
  const triage = new LlmAgent({ name: "triage", description: "Routes requests.", model: model(),
    instruction: "ROLE_TRIAGE. Route the customer's request.", subAgents: [researcher, writer] });
  result = expectation(await runEvents(triage), true);
  settings = { agents: 3, pattern: "sub_agents with transfer_to_agent (root triage; a peer transfer)",
    model: "a BaseLlm of the recorder's: chat completions against the scripted server (ADK JS has no OpenAI-compatible model)",
    env: run === "desk-content-off" ? { [SWITCH]: "false" } : {} };
} else if (run === "pipeline") {
  const researcher = new LlmAgent({ name: "researcher", description: "Finds the facts of an order.", model: model(),
    instruction: "ROLE_RESEARCHER. Look the order up.", tools: [lookupOrder] });
  const writer = new LlmAgent({ name: "writer", description: "Writes to the customer.", model: model(),
    instruction: "ROLE_WRITER. Write the note." });
  const pipeline = new SequentialAgent({ name: "desk", description: "Researches, then writes.",
    subAgents: [researcher, writer] });
  result = expectation(await runEvents(pipeline), true);
  settings = { agents: 2, pattern: "SequentialAgent (researcher, then writer)",
    model: "a BaseLlm of the recorder's: chat completions against the scripted server (ADK JS has no OpenAI-compatible model)",
    env: {} };
} else if (run === "solo") {
  const clerk = new LlmAgent({ name: "clerk", model: model(), instruction: "ROLE_CLERK. Answer.", tools: [lookupOrder] });
  result = expectation(await runEvents(clerk), false);
  settings = { agents: 1,
    model: "a BaseLlm of the recorder's: chat completions against the scripted server (ADK JS has no OpenAI-compatible model)",
    env: {} };
} else {
  throw new Error(`unknown run ${run}`);
}
result.expect.source = SOURCE;

// the provider maybeSetOtelProviders registered, behind the API's global proxy (a simple processor has already
// exported every ended span; the flush is for the record)
await trace.getTracerProvider().getDelegate().forceFlush();
emit({ settings, expect: result.expect, record: result.record, otlp: otlpJson(exporter.getFinishedSpans()) });
