// The OpenAI Agents SDK for JavaScript (@openai/agents), traced by OpenInference's processor
// (@arizeai/openinference-instrumentation-openai-agents, registered with the SDK's own trace-processor API).
//
//   node openai_agents.mjs BASE_URL desk|solo
//
// desk: triage hands off to billing (transfer_to_billing), billing calls lookup_order and hands off to reviewer
// (transfer_to_reviewer), reviewer answers. solo: one agent with one tool, the control run. The model is the SDK's
// default, the Responses API, against the scripted server. The expectation is read from the SDK's RunResult:
// input, rawResponses (each model answer), newItems (tool_call_item: agent and rawItem.name; handoff_output_item:
// sourceAgent, targetAgent), never from a span.
import * as agents from "@openai/agents";
import { OpenAIAgentsInstrumentation } from "@arizeai/openinference-instrumentation-openai-agents";
import { z } from "zod";

import { baseUrl, emit, inMemoryProvider, otlpJson } from "./otlp.mjs";

const TASK = "I was charged twice for order A17. Please refund the duplicate charge.";
const url = baseUrl();
const run = process.argv[3];

process.env.OPENAI_BASE_URL = url;
process.env.OPENAI_API_KEY = "unused";

const { exporter, provider } = inMemoryProvider();
const instrumentation = new OpenAIAgentsInstrumentation({ tracerProvider: provider });
instrumentation.manuallyInstrument(agents); // exclusive: no export to OpenAI's own tracing (offline)

const lookupOrder = agents.tool({
  name: "lookup_order",
  description: "Look up an order's charges.",
  parameters: z.object({ order_id: z.string() }),
  execute: async ({ order_id }) => `Order ${order_id}: charged 49.00 EUR twice on 2026-11-02.`,
});

function expectation(result, multi) {
  const names = [];
  const handoffs = [];
  const tools = [];
  const see = (name) => names.includes(name) || names.push(name);
  for (const item of result.newItems) {
    if (item.type === "handoff_output_item") {
      handoffs.push([item.sourceAgent.name, item.targetAgent.name]);
      see(item.sourceAgent.name);
      see(item.targetAgent.name);
      continue;
    }
    see(item.agent.name);
    if (item.type === "tool_call_item") tools.push([item.agent.name, item.rawItem.name]);
  }
  return {
    conversation: multi, task: String(result.input), agents: names, handoffs, tool_calls: tools,
    messages: 1 + result.rawResponses.length,
    source: "run(agent, input) -> RunResult: input, rawResponses (each model answer), newItems (tool_call_item: "
      + "agent, rawItem.name; handoff_output_item: sourceAgent, targetAgent)",
    hidden: [],
  };
}

let agent;
let settings;
if (run === "desk") {
  const reviewer = new agents.Agent({ name: "reviewer", instructions: "ROLE_REVIEWER. Approve or refuse refunds." });
  const billing = new agents.Agent({
    name: "billing", instructions: "ROLE_BILLING. Check the order, then hand it to the reviewer.",
    tools: [lookupOrder], handoffs: [reviewer],
  });
  agent = new agents.Agent({ name: "triage", instructions: "ROLE_TRIAGE. Route the request.", handoffs: [billing] });
  settings = { agents: 3, model: "responses (the SDK's default)" };
} else if (run === "solo") {
  agent = new agents.Agent({ name: "clerk", instructions: "ROLE_CLERK. Answer.", tools: [lookupOrder] });
  settings = { agents: 1, model: "responses (the SDK's default)" };
} else {
  throw new Error(`unknown run ${run}`);
}

const result = await agents.run(agent, TASK, { maxTurns: 8 });
await agents.getGlobalTraceProvider().forceFlush();
await provider.forceFlush();
emit({ settings, expect: expectation(result, run === "desk"), otlp: otlpJson(exporter.getFinishedSpans()) });
await provider.shutdown();
