// Strands Agents' TypeScript SDK (@strands-agents/sdk), traced by its own OpenTelemetry telemetry as its docs set it
// up with a provider of one's own ("Using your own OpenTelemetry provider": a NodeTracerProvider registered
// globally; the Agent traces through the global API). The provider's span processor exports to memory instead of
// a collector; everything else is as configured for one. The SDK has no switch for message content (it always
// records it, as span events by default); OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental selects the
// latest GenAI conventions (the run "swarm-latest").
//
//   node strands.mjs BASE_URL swarm|swarm-latest|tools|solo
//
// swarm: a Swarm of triage, researcher and writer (the SDK routes by structured output: each agent answers with
// the strands_structured_output tool, {agentId, message}; an agentId hands the turn to that agent with the message
// as its input); triage hands off to the researcher, who calls lookup_order and hands off to the writer, who
// answers. tools: agents as tools (Agent.asTool): a lead whose tools researcher and writer run those agents; the
// researcher calls lookup_order; the lead answers last. solo: one agent with one tool, the control run. The model
// is the SDK's OpenAIModel (chat completions, streamed) against the scripted server. The expectation is read from
// the SDK's own record: each agent's ModelMessageEvent hooks (each message its model answered, as it answered), the
// Swarm's MultiAgentHandoffEvent stream events and its MultiAgentResult; never from a span.
import { Agent, ModelMessageEvent, Swarm, tool } from "@strands-agents/sdk";
import { OpenAIModel } from "@strands-agents/sdk/models/openai";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { z } from "zod";

import { baseUrl, emit, otlpJson } from "../js/otlp.mjs";

const TASK = "I was charged twice for order A17. Please refund the duplicate charge.";
const ROUTE = "strands_structured_output"; // the Swarm's routing tool (the SDK's structured-output tool)
const url = baseUrl();
const run = process.argv[3];
if (run === "swarm-latest") process.env.OTEL_SEMCONV_STABILITY_OPT_IN = "gen_ai_latest_experimental";

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register(); // the global provider and the async-hooks context manager, as the SDK's docs show

const model = () => new OpenAIModel({ api: "chat", modelId: "gpt-4o", apiKey: "unused", clientConfig: { baseURL: url } });
const lookupOrder = tool({
  name: "lookup_order",
  description: "Look up an order's charges.",
  inputSchema: z.object({ order_id: z.string() }),
  callback: ({ order_id }) => `Order ${order_id}: charged 49.00 EUR twice on 2026-11-02.`,
});

/** Every message an agent's model answered, in the order they were answered: the SDK's own record (an agent adds
 * an answer with tool calls to its history only once the tools have run, so its history's order is not the run's). */
const added = [];
function agent(name, systemPrompt, extra = {}) {
  const made = new Agent({ name, id: name, systemPrompt, model: model(), printer: false, ...extra });
  made.addHook(ModelMessageEvent, (event) => { added.push({ agent: name, message: event.message }); });
  return made;
}

const blocks = (message) => message.content ?? [];
const toolUses = (message) => blocks(message).filter((b) => b.type === "toolUseBlock");
const text = (message) => blocks(message).filter((b) => b.type === "textBlock").map((b) => b.text).join("");

/** Speakers in the order they answered, their tool calls and answers, from the agents' answered messages; a call of
 * ROUTE is the Swarm's routing (a handoff when it names an agentId, the final answer when not), a call of a tool
 * that runs an agent is a delegation to it. */
function expectation({ multi, delegations = {} }) {
  const speakers = [];
  const tools = [];
  let answers = 0;
  for (const { agent: name, message } of added) {
    if (message.role !== "assistant") continue;
    answers += 1;
    if (speakers.at(-1) !== name) speakers.push(name);
    for (const use of toolUses(message)) {
      if (use.name !== ROUTE && !(use.name in delegations)) tools.push([name, use.name]);
    }
  }
  const handoffs = [];
  for (let i = 1; i < speakers.length; i += 1) handoffs.push([speakers[i - 1], speakers[i]]);
  return { conversation: multi, task: TASK, agents: [...new Set(speakers)], handoffs, tool_calls: tools,
    messages: 1 + answers, said: said(transcript()), hidden: [] };
}

/** What each answer says, in order: [agent, text] of each answer with text (not its tool calls). */
const said = (answers) => answers.filter((a) => a.text).map((a) => [a.agent, a.text]);

/** Each answer as the SDK recorded it: who said it, its text (a routing call's message is what it says), the
 * tools it called. */
function transcript() {
  return added.filter(({ message }) => message.role === "assistant").map(({ agent: name, message }) => ({
    agent: name,
    text: text(message) || toolUses(message).filter((u) => u.name === ROUTE).map((u) => u.input.message).join(""),
    tools: toolUses(message).map((u) => u.name),
  }));
}

let expect;
let settings;
let record;
if (run === "swarm" || run === "swarm-latest") {
  const triage = agent("triage", "ROUTE_TRIAGE. Route the customer's request.", { description: "Routes requests." });
  const researcher = agent("researcher", "ROUTE_RESEARCHER. Look the order up, then hand off to the writer.",
    { description: "Finds the facts of an order.", tools: [lookupOrder] });
  const writer = agent("writer", "ROUTE_WRITER. Write the note to the customer.",
    { description: "Writes to the customer." });
  const swarm = new Swarm({ nodes: [triage, researcher, writer], start: "triage", maxSteps: 6 });
  const handoffEvents = [];
  let result;
  const stream = swarm.stream(TASK);
  for (let next = await stream.next(); ; next = await stream.next()) {
    if (next.done) { result = next.value; break; }
    if (next.value.type === "multiAgentHandoffEvent") handoffEvents.push([next.value.source, ...next.value.targets]);
  }
  expect = expectation({ multi: true });
  const order = result.results.map((r) => r.nodeId);
  if (JSON.stringify(order) !== JSON.stringify(expect.agents)) throw new Error(`node order ${order} vs ${expect.agents}`);
  if (JSON.stringify(handoffEvents) !== JSON.stringify(expect.handoffs)) throw new Error(`handoffs ${handoffEvents}`);
  expect.source = "each Agent's ModelMessageEvent hook (the SDK's record of every message an agent's model answers, "
    + "with its toolUse blocks; a strands_structured_output call is the Swarm's routing, not a tool call), checked "
    + "against the Swarm's MultiAgentHandoffEvent stream events and MultiAgentResult.results (node order); the task "
    + "as given to Swarm.stream()";
  record = { status: result.status, nodes: order, handoff_events: handoffEvents, answers: transcript() };
  settings = { agents: 3, pattern: "Swarm (routing by structured output)", model: "OpenAIModel api chat (streamed)",
    env: run === "swarm-latest" ? { OTEL_SEMCONV_STABILITY_OPT_IN: "gen_ai_latest_experimental" } : {},
    content_switch: "none (the SDK always records message content)" };
} else if (run === "tools") {
  const researcher = agent("researcher", "ROLE_RESEARCHER. Look the order up.",
    { description: "Finds the facts of an order.", tools: [lookupOrder] });
  const writer = agent("writer", "ROLE_WRITER. Write the note.", { description: "Writes to the customer." });
  const lead = agent("lead", "ROLE_LEAD. Coordinate the team.", { tools: [researcher.asTool(), writer.asTool()] });
  const result = await lead.invoke(TASK);
  // a delegation: the lead's call of the tool named after an agent; the agent's own answers follow it
  expect = expectation({ multi: true, delegations: { researcher: 1, writer: 1 } });
  expect.source = "each Agent's ModelMessageEvent hook (the SDK's record of every message an agent's model answers, "
    + "with its toolUse blocks; a call of researcher or writer, the tools Agent.asTool() made, runs that agent); the "
    + "task as given to invoke()";
  record = { stop_reason: result.stopReason, answers: transcript() };
  settings = { agents: 3, pattern: "agents as tools (Agent.asTool)", model: "OpenAIModel api chat (streamed)", env: {},
    content_switch: "none (the SDK always records message content)" };
} else if (run === "solo") {
  const clerk = agent("clerk", "ROLE_CLERK. Answer.", { tools: [lookupOrder] });
  const result = await clerk.invoke(TASK);
  expect = expectation({ multi: false });
  expect.source = "the Agent's ModelMessageEvent hook; the task as given to invoke()";
  record = { stop_reason: result.stopReason, answers: transcript() };
  settings = { agents: 1, model: "OpenAIModel api chat (streamed)", env: {},
    content_switch: "none (the SDK always records message content)" };
} else {
  throw new Error(`unknown run ${run}`);
}

await provider.forceFlush();
emit({ settings, expect, record, otlp: otlpJson(exporter.getFinishedSpans()) });
await provider.shutdown();
