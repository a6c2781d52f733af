// The Vercel AI SDK (`ai`, with @ai-sdk/openai's chat-completions model), traced the way its users trace it: an
// OpenTelemetry NodeTracerProvider registered globally, and `experimental_telemetry: { isEnabled: true,
// recordInputs: true, recordOutputs: true, functionId }` on each agent, so the SDK writes its own spans
// (ai.generateText, ai.generateText.doGenerate, ai.toolCall: the `ai.*` attributes, a few `gen_ai.*` ones) with the
// tracer scope "ai". The functionId names the agent, as the SDK's telemetry docs suggest ("identify the function").
// The provider's span processor exports to memory instead of a collector; everything else is as configured for one.
//
//   node vercel_ai.mjs BASE_URL desk|solo
//
// desk: a lead agent (ToolLoopAgent) whose tools run sub-agents, the SDK's "subagents" pattern (a tool's execute
// calls another agent's generate() and returns its text): `research` runs the researcher, who calls lookup_order
// and answers; `write` runs the writer, who answers; the lead answers last. solo: one agent with one tool, the
// control run. The expectation is read from the SDK's own results: each agent's result.steps (each model answer,
// its toolCalls and toolResults), a call of a tool that ran a sub-agent being a delegation whose result's steps
// follow; never from a span.
import { createOpenAI } from "@ai-sdk/openai";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { stepCountIs, tool, ToolLoopAgent } from "ai";
import { z } from "zod";

import { baseUrl, emit, otlpJson } from "./otlp.mjs";

const TASK = "I was charged twice for order A17. Please refund the duplicate charge.";
const url = baseUrl();
const run = process.argv[3];

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register(); // the global tracer provider and the async-hooks context manager, as users set it up

const openai = createOpenAI({ baseURL: url, apiKey: "unused" });
const model = openai.chat("gpt-4o");

const telemetry = (functionId) => ({
  isEnabled: true, recordInputs: true, recordOutputs: true, functionId, metadata: { agent: functionId },
});

const lookupOrder = tool({
  description: "Look up an order's charges.",
  inputSchema: z.object({ order_id: z.string() }),
  execute: async ({ order_id }) => `Order ${order_id}: charged 49.00 EUR twice on 2026-11-02.`,
});

/** Each sub-agent's results, as its generate() returned them, in the order they ran; and which tool ran it. */
const delegated = [];

/** A tool that runs a sub-agent: the SDK's subagent pattern (its result's text is the tool's result). */
function subagentTool(agent, description) {
  return tool({
    description,
    inputSchema: z.object({ task: z.string() }),
    execute: async ({ task }, { abortSignal, toolCallId }) => {
      const result = await agent.generate({ prompt: task, abortSignal });
      delegated.push({ toolCallId, agent: agent.id, result });
      return result.text;
    },
  });
}

const agent = (id, instructions, tools) => new ToolLoopAgent({
  id, model, instructions, tools, stopWhen: stepCountIs(8), maxRetries: 0, experimental_telemetry: telemetry(id),
});
const researcher = agent("researcher", "ROLE_RESEARCHER. Look the order up.", { lookup_order: lookupOrder });
const writer = agent("writer", "ROLE_WRITER. Write the note to the customer.", {});
const lead = agent("lead", "ROLE_LEAD. Coordinate the team: research first, then write.", {
  research: subagentTool(researcher, "Ask the researcher to find the facts of an order."),
  write: subagentTool(writer, "Ask the writer to write to the customer."),
});
const clerk = agent("clerk", "ROLE_CLERK. Answer.", { lookup_order: lookupOrder });

/** The agent's answers in order (result.steps: one per model answer, with its toolCalls and toolResults); a call of
 * a tool that ran a sub-agent hands the turn to that sub-agent, whose own steps are its answers and tool calls,
 * and the agent's next answer takes it back. */
function expectation(agentName, result, multi) {
  const speakers = [];
  const tools = [];
  let answers = 0;
  const walk = (name, steps) => {
    for (const step of steps) {
      answers += 1;
      speakers.push(name);
      const results = new Set((step.toolResults ?? []).map((r) => r.toolCallId));
      for (const call of step.toolCalls ?? []) {
        if (!results.has(call.toolCallId)) throw new Error(`tool call ${call.toolCallId} has no result`);
        const sub = delegated.find((d) => d.toolCallId === call.toolCallId);
        if (!sub) {
          tools.push([name, call.toolName]);
          continue;
        }
        walk(sub.agent, sub.result.steps); // (the way back: the delegating agent's next answer)
      }
    }
  };
  walk(agentName, result.steps);
  const handoffs = [];
  for (let i = 1; i < speakers.length; i += 1) {
    if (speakers[i] !== speakers[i - 1]) handoffs.push([speakers[i - 1], speakers[i]]);
  }
  return {
    conversation: multi, task: TASK, agents: [...new Set(speakers)], handoffs, tool_calls: tools,
    messages: 1 + answers,
    source: "each agent's generate() result: result.steps (each model answer, its toolCalls and toolResults); a call "
      + "of a tool whose execute ran a sub-agent's generate() is a delegation to it, whose result.steps follow; "
      + `response.messages: ${result.response.messages.length}; the task as given to generate()`,
    hidden: [],
  };
}

let expect;
let settings;
const pattern = "ToolLoopAgent whose tools run sub-agents' generate() (the SDK's subagents pattern)";
const modelNote = "@ai-sdk/openai createOpenAI({baseURL}).chat(): chat completions (not streamed)";
const telemetryNote = "NodeTracerProvider registered; experimental_telemetry {isEnabled, recordInputs, "
  + "recordOutputs, functionId: the agent, metadata.agent} on each agent";
if (run === "desk") {
  const result = await lead.generate({ prompt: TASK });
  expect = expectation("lead", result, true);
  settings = { agents: 3, pattern, model: modelNote, telemetry: telemetryNote };
} else if (run === "solo") {
  const result = await clerk.generate({ prompt: TASK });
  expect = expectation("clerk", result, false);
  settings = { agents: 1, model: modelNote, telemetry: telemetryNote };
} else {
  throw new Error(`unknown run ${run}`);
}

await provider.forceFlush();
emit({ settings, expect, otlp: otlpJson(exporter.getFinishedSpans()) });
await provider.shutdown();
