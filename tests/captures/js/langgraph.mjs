// LangGraph.js (@langchain/langgraph with @langchain/langgraph-supervisor), traced by OpenInference's LangChain.js
// instrumentation (@arizeai/openinference-instrumentation-langchain, on @langchain/core's callback manager), or
// with `openllmetry` by OpenLLMetry JS the way its users set it up without the Traceloop SDK: a NodeTracerProvider
// registered globally (the async-hooks context manager), @traceloop/instrumentation-langchain (which patches the
// callback manager itself) and @traceloop/instrumentation-openai (manuallyInstrument on the `openai` module that
// @langchain/openai calls, as an ES module needs).
//
//   node langgraph.mjs BASE_URL supervisor|solo [openinference|openllmetry]
//
// supervisor: the supervisor transfers to a researcher (transfer_to_researcher), who calls lookup_order and
// answers, then to a writer (transfer_to_writer), who answers; the supervisor answers last. outputMode
// "full_history", so the final state holds every agent's messages. solo: one ReAct agent with one tool, the
// control run. The expectation is read from the graph's final state: its messages, each AI message named by the
// agent that wrote it (`name`), with its tool calls; never from a span.
import * as CallbackManagerModule from "@langchain/core/callbacks/manager";
import { tool } from "@langchain/core/tools";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { createSupervisor } from "@langchain/langgraph-supervisor";
import { ChatOpenAI } from "@langchain/openai";
import { LangChainInstrumentation } from "@arizeai/openinference-instrumentation-langchain";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { LangChainInstrumentation as TraceloopLangChain } from "@traceloop/instrumentation-langchain";
import { OpenAIInstrumentation as TraceloopOpenAI } from "@traceloop/instrumentation-openai";
import * as OpenAIModule from "openai";
import { z } from "zod";

import { baseUrl, emit, inMemoryProvider, otlpJson } from "./otlp.mjs";

const TASK = "I was charged twice for order A17. Please refund the duplicate charge.";
const url = baseUrl();
const run = process.argv[3];
const traced = process.argv[4] ?? "openinference";

// What OpenLLMetry JS writes of this run, whatever the adapters' rules: every span is the root of a trace of its
// own. @traceloop/instrumentation-langchain (0.27.0) starts each callback's span with the active context, never
// its parent run's (parentRunId is not read), and makes none active, so the OpenAI instrumentation's model calls
// have no parent either; no span links, no conversation or session id, no agent name, no entity path. A capture
// so marked is read as no conversation until a rule can tie its traces (tests/adapters/test_captures.py).
const UNREAD = "every span is a trace of its own (the LangChain handler ignores parentRunId): no link, shared id "
  + "or agent name ties the traces or names a speaker";

let exporter;
let provider;
if (traced === "openinference") {
  ({ exporter, provider } = inMemoryProvider());
  const instrumentation = new LangChainInstrumentation({ tracerProvider: provider });
  instrumentation.manuallyInstrument(CallbackManagerModule);
} else if (traced === "openllmetry") {
  exporter = new InMemorySpanExporter();
  provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  provider.register();
  const langchain = new TraceloopLangChain();
  langchain.manuallyInstrument({ callbackManagerModule: CallbackManagerModule });
  const openai = new TraceloopOpenAI();
  openai.manuallyInstrument(OpenAIModule.default ?? OpenAIModule);
} else {
  throw new Error(`unknown instrumentation ${traced}`);
}

const model = () => new ChatOpenAI({ model: "gpt-4o", apiKey: "unused", maxRetries: 0, configuration: { baseURL: url } });

const lookupOrder = tool(async ({ order_id }) => `Order ${order_id}: charged 49.00 EUR twice on 2026-11-02.`, {
  name: "lookup_order",
  description: "Look up an order's charges.",
  schema: z.object({ order_id: z.string() }),
});

const TRANSFER = /^transfer_to_(.+)$/;
const BACK = /^transfer_back_to_/;

/** From the final state's messages: the speaker of each AI message (its `name`), in order; a transfer tool call
 * hands the turn to the agent it names, a change of speaker is a handoff; other tool calls are the speaker's. The
 * "Transferring back" AI message (a transfer_back_to_* call) is langgraph-supervisor's own, written by no model: it
 * is not an answer, and the next speaker's turn shows the return. */
function expectation(state, lead, multi) {
  const speakers = [];
  const tools = [];
  let answers = 0;
  for (const message of state.messages) {
    if (message.getType() !== "ai") continue;
    const calls = message.tool_calls ?? [];
    if (calls.some((c) => BACK.test(c.name))) continue;
    const speaker = message.name ?? lead;
    answers += 1;
    speakers.push(speaker);
    for (const call of calls) {
      const transfer = TRANSFER.exec(call.name);
      if (transfer) speakers.push(transfer[1]);
      else tools.push([speaker, call.name]);
    }
  }
  const handoffs = [];
  for (let i = 1; i < speakers.length; i += 1) {
    if (speakers[i] !== speakers[i - 1]) handoffs.push([speakers[i - 1], speakers[i]]);
  }
  const first = state.messages[0];
  return {
    conversation: multi, task: String(first.content), agents: [...new Set(speakers)], handoffs, tool_calls: tools,
    messages: 1 + answers,
    source: "graph.invoke({messages}) -> the final state's messages: the first (HumanMessage) as the task; each "
      + "AIMessage's name (its agent) and tool_calls (transfer_to_<agent>: a handoff; transfer_back_to_*: "
      + "langgraph-supervisor's own message, not an answer)",
    hidden: [],
    ...(traced === "openinference" ? {} : { framework: "langgraph-js" }),
    ...(traced === "openllmetry" && multi ? { unread: UNREAD } : {}),
  };
}

let state;
let settings;
let expect;
if (run === "supervisor") {
  const researcher = createReactAgent({
    llm: model(), tools: [lookupOrder], name: "researcher", prompt: "ROLE_RESEARCHER. Look the order up.",
  });
  const writer = createReactAgent({ llm: model(), tools: [], name: "writer", prompt: "ROLE_WRITER. Write the note." });
  const app = createSupervisor({
    agents: [researcher, writer], llm: model(), outputMode: "full_history",
    prompt: "ROLE_SUPERVISOR. Route the request to the researcher, then the writer.",
  }).compile();
  state = await app.invoke({ messages: [{ role: "user", content: TASK }] });
  settings = { agents: 3, pattern: "createSupervisor (outputMode full_history)", model: "ChatOpenAI (chat completions)",
    traced };
  expect = expectation(state, "supervisor", true);
} else if (run === "solo") {
  const clerk = createReactAgent({ llm: model(), tools: [lookupOrder], name: "clerk", prompt: "ROLE_CLERK. Answer." });
  state = await clerk.invoke({ messages: [{ role: "user", content: TASK }] });
  settings = { agents: 1, pattern: "createReactAgent", model: "ChatOpenAI (chat completions)", traced };
  expect = expectation(state, "clerk", false);
} else {
  throw new Error(`unknown run ${run}`);
}

await provider.forceFlush();
emit({ settings, expect, otlp: otlpJson(exporter.getFinishedSpans()) });
if (process.env.MAST_CAPTURE_DEBUG) {
  for (const m of state.messages) console.error(m.getType(), m.name, JSON.stringify(m.content), JSON.stringify(m.tool_calls ?? []));
}
await provider.shutdown();
