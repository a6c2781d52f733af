// Mastra's agent network (Agent.network(), @mastra/core), traced as mastra.mjs traces Mastra: its observability
// (@mastra/observability) with its OTel exporter (@mastra/otel-exporter, the GenAI conventions), the exporter's span
// exporter replaced by an in-memory one. The network needs memory (@mastra/memory; the Mastra instance's storage is
// the in-memory store).
//
//   node mastra_network.mjs BASE_URL network|solo
//
// network: an agent (coordinator) with the agents researcher and writer runs .network(): Mastra's routing agent picks
// one agent at a time (a structured decision: primitiveId, prompt, selectionReason) and, after each, checks whether
// the task is complete (a structured answer: isComplete, completionReason); it picks the researcher, who calls
// lookup_order and answers, then the writer, who answers, and the second check finds the task complete. solo: one
// agent with one tool (generate()), the control run. The expectation is read from Mastra's own record, the network
// stream's chunks (routing-agent-end: each decision; agent-execution-start / -end: the agent run and its result;
// agent-execution-event-step-finish and -tool-call: the agent's answers and tool calls; network-validation-end: each
// check), and for solo the agent's onStepFinish steps; never from a span.
import { Agent } from "@mastra/core/agent";
import { Mastra } from "@mastra/core/mastra";
import { InMemoryStore } from "@mastra/core/storage";
import { createTool } from "@mastra/core/tools";
import { Memory } from "@mastra/memory";
import { Observability } from "@mastra/observability";
import { OtelExporter } from "@mastra/otel-exporter";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { z } from "zod";

import { baseUrl, emit, otlpJson } from "./otlp.mjs";

const TASK = "I was charged twice for order A17. Please refund the duplicate charge.";
const NETWORK = "coordinator";
const url = baseUrl();
const run = process.argv[3];

const model = { id: "openai/gpt-4o", url, apiKey: "unused", api: "chat" };
const lookupOrder = createTool({
  id: "lookup_order",
  description: "Look up an order's charges.",
  inputSchema: z.object({ order_id: z.string() }),
  execute: async ({ order_id }) => `Order ${order_id}: charged 49.00 EUR twice on 2026-11-02.`,
});

const memory = new InMemorySpanExporter();
const otel = new OtelExporter({
  // Where a collector would be; never reached: `exporter` takes the spans instead.
  provider: { custom: { endpoint: "http://127.0.0.1:4318", protocol: "http/json" } },
  exporter: memory,
  signals: { logs: false },
});

const soloSteps = [];
const researcher = new Agent({
  id: "researcher", name: "researcher", description: "Finds the facts of an order.",
  instructions: "ROLE_RESEARCHER. Look the order up.", model, tools: { lookup_order: lookupOrder },
});
const writer = new Agent({
  id: "writer", name: "writer", description: "Writes to the customer.", instructions: "ROLE_WRITER. Write the note.",
  model,
});
// (its instructions become the routing agent's: no ROLE_ marker, so the scripted rules tell a decision from a check
// by the prompt each is sent)
const coordinator = new Agent({
  id: NETWORK, name: NETWORK, instructions: "Coordinate the refund desk: research the order first, then write.",
  model, agents: { researcher, writer }, memory: new Memory(),
});
const clerk = new Agent({
  id: "clerk", name: "clerk", instructions: "ROLE_CLERK. Answer.", model, tools: { lookup_order: lookupOrder },
  defaultOptions: { onStepFinish: (step) => { soloSteps.push(step); } },
});

const mastra = new Mastra({
  agents: { coordinator, researcher, writer, clerk },
  storage: new InMemoryStore(),
  observability: new Observability({ configs: { otel: { serviceName: "mast-otel-capture", exporters: [otel] } } }),
  logger: false,
});

/** The network's run from its stream's chunks: the coordinator (its routing agent) answers each decision and each
 * completion check; the agent it picks answers in its turn (each step one answer, its tool calls), the turn coming
 * back to the coordinator for the check. */
function networkExpectation(chunks) {
  const speakers = [];
  const tools = [];
  const answers = [];
  const say = (agent, text, calls = []) => {
    answers.push({ agent, text, tools: calls });
    if (speakers.at(-1) !== agent) speakers.push(agent);
  };
  let current = null;
  let calls = [];
  for (const { type, payload } of chunks) {
    if (type === "routing-agent-end") say(NETWORK, payload.isComplete ? payload.selectionReason : payload.prompt);
    else if (type === "agent-execution-start") current = payload.agentId;
    else if (type === "agent-execution-event-tool-call") calls.push(payload.payload.toolName);
    else if (type === "agent-execution-event-step-finish") {
      const text = (payload.payload.stepResult?.text ?? payload.payload.output?.text ?? "");
      say(current, text, calls);
      tools.push(...calls.map((name) => [current, name]));
      calls = [];
    } else if (type === "network-validation-end") say(NETWORK, payload.results.map((r) => r.reason).join(" "));
  }
  const handoffs = [];
  for (let i = 1; i < speakers.length; i += 1) handoffs.push([speakers[i - 1], speakers[i]]);
  return {
    expect: { conversation: true, task: TASK, agents: [...new Set(speakers)], handoffs, tool_calls: tools,
      messages: 1 + answers.length, said: answers.filter((a) => a.text).map((a) => [a.agent, a.text]), hidden: [],
      framework: "mastra",
      source: "the network stream's chunks (Mastra's record of the run): routing-agent-end (each decision of the "
        + "coordinator's routing agent: the agent picked and its prompt), agent-execution-start and the agent's "
        + "agent-execution-event-step-finish / -tool-call chunks (its answers and tool calls), network-validation-end "
        + "(each completion check, answered by the routing agent); the task as given to network()" },
    record: { answers, chunk_types: chunks.map((c) => c.type).filter((t) => !t.includes("-delta")) },
  };
}

let result;
let settings;
if (run === "network") {
  const stream = await mastra.getAgent(NETWORK).network(TASK, { memory: { thread: "desk", resource: "customer" },
    maxSteps: 6 });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  result = networkExpectation(chunks);
  settings = { agents: 3, pattern: "agent network (Agent.network(): a routing agent, completion checks)",
    memory: "@mastra/memory, Mastra storage InMemoryStore", model: "OpenAI-compatible config, chat completions" };
} else if (run === "solo") {
  await mastra.getAgent("clerk").generate(TASK, { maxSteps: 4 });
  const answers = soloSteps.map((step) => ({ agent: "clerk", text: step.text ?? "",
    tools: (step.toolCalls ?? []).map((call) => call.payload?.toolName ?? call.toolName) }));
  result = {
    expect: { conversation: false, task: TASK, agents: ["clerk"], handoffs: [],
      tool_calls: answers.flatMap((a) => a.tools.map((t) => ["clerk", t])), messages: 1 + answers.length, hidden: [],
      framework: "mastra", source: "the Agent's defaultOptions.onStepFinish; the task as given to generate()" },
    record: { answers },
  };
  settings = { agents: 1, model: "OpenAI-compatible config, chat completions (streamed)" };
} else {
  throw new Error(`unknown run ${run}`);
}

await otel.flush();
emit({ settings, expect: result.expect, record: result.record, otlp: otlpJson(memory.getFinishedSpans()) });
await mastra.shutdown?.();
