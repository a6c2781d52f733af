// VoltAgent (@voltagent/core), traced by its own OpenTelemetry observability as its docs set up an OTLP export:
// `new VoltAgent({ agents, observability: new VoltAgentObservability({ spanProcessors: [...] }) })`, the span
// processor in front of the exporter one would point at a collector; here it exports to memory. VoltAgent writes
// a span schema of its own (agent, sub-agent and tool spans with entity.*, input, output attributes) under its
// tracer; it has no switch for message content.
//
//   node voltagent.mjs BASE_URL desk|solo
//
// desk: a supervisor (lead) with sub-agents researcher and writer (subAgents: VoltAgent gives the supervisor its
// delegate_task tool, {task, targetAgents}); the lead delegates to the researcher, who calls lookup_order and
// answers, then to the writer, who answers; the lead answers last. solo: one agent with one tool, the control run.
// The model is the AI SDK's OpenAI provider (@ai-sdk/openai, chat completions) against the scripted server. The
// expectation is read from VoltAgent's own record: each agent's onStepFinish hook (each model answer, its
// toolCalls; a delegate_task call hands the turn to the targetAgents, whose own steps follow) and the
// onHandoff hooks; never from a span.
import { createOpenAI } from "@ai-sdk/openai";
import { Agent, VoltAgent, VoltAgentObservability, createTool } from "@voltagent/core";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { z } from "zod";

import { baseUrl, emit, otlpJson } from "../js/otlp.mjs";

const TASK = "I was charged twice for order A17. Please refund the duplicate charge.";
const DELEGATE = "delegate_task";
const url = baseUrl();
const run = process.argv[3];

const exporter = new InMemorySpanExporter();
const observability = new VoltAgentObservability({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

const model = createOpenAI({ baseURL: url, apiKey: "unused" }).chat("gpt-4o");
const lookupOrder = createTool({
  name: "lookup_order",
  description: "Look up an order's charges.",
  parameters: z.object({ order_id: z.string() }),
  execute: async ({ order_id }) => `Order ${order_id}: charged 49.00 EUR twice on 2026-11-02.`,
});

/** Each step an agent finished (its onStepFinish hook: one per model answer), in order; each handoff (onHandoff). */
const steps = [];
const handoffHooks = [];
const hooks = (name) => ({
  onStepFinish: async ({ step }) => { steps.push({ agent: name, step }); },
  onHandoff: async ({ agent, sourceAgent }) => { handoffHooks.push([sourceAgent.name, agent.name]); },
});
const agent = (name, instructions, extra = {}) => new Agent({ name, instructions, model, hooks: hooks(name), ...extra });

function toolCalls(step) {
  return (step.toolCalls ?? []).map((call) => ({ name: call.toolName, input: call.input ?? call.args }));
}

/** Speakers in the order they answered, their tool calls and answers. An agent's step finishes only once its tools
 * have run, so a supervisor's step comes after the steps of the sub-agents it delegated to: the run is read from
 * the first agent's steps, a delegate_task call handing the turn to each of its targetAgents, whose steps for that
 * task (up to its answer without tool calls) follow, the turn going back to the supervisor after. delegate_task is
 * the delegation, not a tool call. */
function expectation(multi, first) {
  const speakers = [];
  const tools = [];
  const answers = [];
  const left = {};
  const say = (name, step) => {
    const calls = toolCalls(step);
    answers.push({ agent: name, text: step.text ?? "", tools: calls.map((c) => c.name) });
    if (speakers.at(-1) !== name) speakers.push(name);
    return calls;
  };
  const turn = (name) => {
    left[name] ??= steps.filter((s) => s.agent === name).map((s) => s.step);
    while (left[name].length) {
      const calls = say(name, left[name].shift());
      for (const call of calls) {
        if (call.name !== DELEGATE) tools.push([name, call.name]);
        else for (const target of call.input.targetAgents) { turn(target); speakers.push(name); }
      }
      if (!calls.length && name !== first) return; // a sub-agent's answer ends its task
    }
  };
  turn(first);
  const handoffs = [];
  for (let i = 1; i < speakers.length; i += 1) {
    if (speakers[i] !== speakers[i - 1]) handoffs.push([speakers[i - 1], speakers[i]]);
  }
  return {
    expect: { conversation: multi, task: TASK, agents: [...new Set(speakers)], handoffs, tool_calls: tools,
      messages: 1 + answers.length, said: answers.filter((a) => a.text).map((a) => [a.agent, a.text]), hidden: [],
      source: "each Agent's onStepFinish hook (VoltAgent's record of each model answer, its toolCalls; a delegate_task "
        + "call is the supervisor handing the task to its targetAgents, whose steps follow), checked against the "
        + "onHandoff hooks; the task as given to generateText()" },
    record: { answers, handoff_hooks: handoffHooks },
  };
}

let result;
let settings;
if (run === "desk") {
  const researcher = agent("researcher", "ROLE_RESEARCHER. Look the order up.",
    { purpose: "Finds the facts of an order.", tools: [lookupOrder] });
  const writer = agent("writer", "ROLE_WRITER. Write the note.", { purpose: "Writes to the customer." });
  const lead = agent("lead", "ROLE_LEAD. Coordinate the team.", { subAgents: [researcher, writer] });
  new VoltAgent({ agents: { lead, researcher, writer }, observability });
  await lead.generateText(TASK, { maxSteps: 8 });
  result = expectation(true, "lead");
  const delegated = result.expect.handoffs.filter(([from]) => from === "lead");
  if (JSON.stringify(delegated) !== JSON.stringify(handoffHooks)) throw new Error(`onHandoff ${JSON.stringify(handoffHooks)} vs ${JSON.stringify(result)}`);
  settings = { agents: 3, pattern: "supervisor with subAgents (delegate_task)",
    model: "@ai-sdk/openai chat model", content_switch: "none (VoltAgent always records input and output)" };
} else if (run === "solo") {
  const clerk = agent("clerk", "ROLE_CLERK. Answer.", { tools: [lookupOrder] });
  new VoltAgent({ agents: { clerk }, observability });
  await clerk.generateText(TASK, { maxSteps: 4 });
  result = expectation(false, "clerk");
  settings = { agents: 1, model: "@ai-sdk/openai chat model",
    content_switch: "none (VoltAgent always records input and output)" };
} else {
  throw new Error(`unknown run ${run}`);
}

await observability.forceFlush?.();
emit({ settings, expect: result.expect, record: result.record, otlp: otlpJson(exporter.getFinishedSpans()) });
await observability.shutdown?.();
process.exit(0); // (VoltAgent keeps timers of its own alive)
