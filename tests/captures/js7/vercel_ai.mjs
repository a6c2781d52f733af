// The Vercel AI SDK 7 (`ai` 7, with @ai-sdk/openai's chat-completions model), traced the way its 7.x docs set it up:
// tracing moved out of `ai` into @ai-sdk/otel, whose default integration (`registerTelemetry(new OpenTelemetry())`)
// writes the OpenTelemetry GenAI conventions (invoke_agent, chat, execute_tool spans; gen_ai.* attributes) with the
// tracer scope "gen_ai", onto the globally registered NodeTracerProvider; `telemetry: { functionId }` on each agent
// names it (gen_ai.agent.name). The provider's span processor exports to memory instead of a collector.
// The same desk as ../js/vercel_ai.mjs (ai 6, its own ai.* spans); ai 6 and 7 cannot share one package.json.
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
import { OpenTelemetry } from "@ai-sdk/otel";
import { registerTelemetry, stepCountIs, tool, ToolLoopAgent } from "ai";
import { z } from "zod";

import { baseUrl, emit, otlpJson } from "../js/otlp.mjs";

const TASK = "I was charged twice for order A17. Please refund the duplicate charge.";
const url = baseUrl();
const run = process.argv[3];

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register(); // the global tracer provider and the async-hooks context manager, as users set it up
registerTelemetry(new OpenTelemetry()); // @ai-sdk/otel's default integration: the GenAI conventions

const openai = createOpenAI({ baseURL: url, apiKey: "unused" });
const model = openai.chat("gpt-4o");

const telemetry = (functionId) => ({ recordInputs: true, recordOutputs: true, functionId });

// What the spans say of the framework: nothing. The tracer scope is "gen_ai" (the convention's name), the resource
// names only the OpenTelemetry SDK (telemetry.sdk.*; service.name unknown_service), and every attribute is a GenAI
// convention's (gen_ai.provider.name is the model's vendor). The capture expects what that honestly reads as.
const FRAMEWORK = "unknown";

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
  id, model, instructions, tools, stopWhen: stepCountIs(8), maxRetries: 0, telemetry: telemetry(id),
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
    conversation: multi, task: TASK, framework: FRAMEWORK, agents: [...new Set(speakers)], handoffs, tool_calls: tools,
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
const telemetryNote = "NodeTracerProvider registered; registerTelemetry(new OpenTelemetry()) (@ai-sdk/otel's "
  + "default integration); telemetry {recordInputs, recordOutputs, functionId: the agent} on each agent";
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
