// Mastra (@mastra/core agents), traced the way Mastra's users export OpenTelemetry: Mastra's observability
// (@mastra/observability) with its OTel exporter (@mastra/otel-exporter), which writes the GenAI conventions
// (invoke_agent, chat, execute_tool). The exporter's own span exporter is replaced by an in-memory one (its
// `exporter` option); everything else is as configured for a collector.
//
//   node mastra.mjs BASE_URL desk|solo
//
// desk: a lead agent with two sub-agents (Mastra gives them to it as the tools agent-researcher and agent-writer)
// delegates to the researcher, who calls lookup_order and answers, then to the writer, who answers; the lead
// answers last. solo: one agent with one tool, the control run. The model is Mastra's OpenAI-compatible config
// (chat completions, streamed) against the scripted server. The expectation is read from Mastra's own record: the
// steps each agent reports to its onStepFinish (each model answer and its toolCalls; a call of agent-<name> is a
// delegation, the sub-agent's own steps follow); never from a span.
import { Agent } from "@mastra/core/agent";
import { Mastra } from "@mastra/core/mastra";
import { createTool } from "@mastra/core/tools";
import { Observability } from "@mastra/observability";
import { OtelExporter } from "@mastra/otel-exporter";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { z } from "zod";

import { baseUrl, emit, otlpJson } from "./otlp.mjs";

const TASK = "I was charged twice for order A17. Please refund the duplicate charge.";
const url = baseUrl();
const run = process.argv[3];
const DELEGATE = /^agent-(.+)$/;

/** Each agent's steps, as Mastra reports them to the agent's onStepFinish (one per model answer, with its
 * toolCalls), in the order they finished. */
const steps = { lead: [], researcher: [], writer: [], clerk: [] };
const recorded = (name) => ({ onStepFinish: (step) => { steps[name].push(step); } });

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

const researcher = new Agent({
  id: "researcher", name: "researcher", description: "Finds the facts of an order.",
  instructions: "ROLE_RESEARCHER. Look the order up.", model, tools: { lookup_order: lookupOrder },
  defaultOptions: recorded("researcher"),
});
const writer = new Agent({
  id: "writer", name: "writer", description: "Writes to the customer.", instructions: "ROLE_WRITER. Write the note.",
  model, defaultOptions: recorded("writer"),
});
const lead = new Agent({
  id: "lead", name: "lead", instructions: "ROLE_LEAD. Coordinate the team.", model, agents: { researcher, writer },
  defaultOptions: recorded("lead"),
});
const clerk = new Agent({
  id: "clerk", name: "clerk", instructions: "ROLE_CLERK. Answer.", model, tools: { lookup_order: lookupOrder },
  defaultOptions: recorded("clerk"),
});

const mastra = new Mastra({
  agents: { lead, researcher, writer, clerk },
  observability: new Observability({ configs: { otel: { serviceName: "mast-otel-capture", exporters: [otel] } } }),
  logger: false,
});

function toolNames(step) {
  return (step.toolCalls ?? []).map((call) => call.payload?.toolName ?? call.toolName);
}

/** The lead's answers in order; a delegation (a call of agent-<name>) hands the turn to that sub-agent, whose own
 * steps are its answers and tool calls, and the lead's next answer takes it back. */
function expectation(agentName, multi) {
  const speakers = [];
  const tools = [];
  let answers = 0;
  for (const step of steps[agentName]) {
    answers += 1;
    speakers.push(agentName);
    for (const toolName of toolNames(step)) {
      const delegated = DELEGATE.exec(toolName);
      if (!delegated) {
        tools.push([agentName, toolName]);
        continue;
      }
      const member = delegated[1];
      speakers.push(member);
      for (const own of steps[member]) {
        answers += 1;
        tools.push(...toolNames(own).map((t) => [member, t]));
      }
    }
  }
  const handoffs = [];
  for (let i = 1; i < speakers.length; i += 1) {
    if (speakers[i] !== speakers[i - 1]) handoffs.push([speakers[i - 1], speakers[i]]);
  }
  return {
    conversation: multi, task: TASK, agents: [...new Set(speakers)], handoffs, tool_calls: tools,
    messages: 1 + answers,
    source: "each Agent's defaultOptions.onStepFinish (Mastra's record of each model answer, its toolCalls; a call "
      + "of agent-<name> is the lead delegating to that sub-agent, whose steps follow); the task as given to "
      + "generate()",
    hidden: [],
  };
}

let expect;
let settings;
if (run === "desk") {
  await mastra.getAgent("lead").generate(TASK, { maxSteps: 8 });
  expect = expectation("lead", true);
  settings = { agents: 3, pattern: "supervisor agent with sub-agents (agents: {researcher, writer})",
    model: "OpenAI-compatible config, chat completions (streamed)" };
} else if (run === "solo") {
  await mastra.getAgent("clerk").generate(TASK, { maxSteps: 4 });
  expect = expectation("clerk", false);
  settings = { agents: 1, model: "OpenAI-compatible config, chat completions (streamed)" };
} else {
  throw new Error(`unknown run ${run}`);
}

await otel.flush();
emit({ settings, expect, otlp: otlpJson(memory.getFinishedSpans()) });
await mastra.shutdown?.();
