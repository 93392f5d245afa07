import type { NewExecutionEvent, RunStopReason } from '../services/execution-events';
import { type ContentBlock, type ModelMessage, type ModelProvider, ProviderError, type ToolSpec } from './provider';
import { sleep } from '../lib/clock';

export interface AgentTool {
  spec: ToolSpec;
  /** The display name in `agent.tool_use`. */
  displayName: string;
  /** A short description of this call for `agent.tool_use.label`; never a secret. */
  label: (input: Record<string, unknown>) => string;
  /** `call.id` is the model's id of this call (the loop always gives it): the same when a turn cut off during the call makes it again. */
  run: (input: Record<string, unknown>, call?: { id: string }) => Promise<{ content: string; isError?: boolean }>;
}

/** A round of tool calls under way: the calls are the `tool_use` blocks of the conversation's last message, `results` the answers so far, in order. */
export interface ToolRound {
  results: ContentBlock[];
}

export interface AgentLoopOptions {
  provider: ModelProvider;
  system: string;
  /** The conversation so far, ending with the new user message. */
  messages: ModelMessage[];
  tools: AgentTool[];
  maxTokens: number;
  /** Model requests allowed in one run (each tool round trip is one more). */
  maxTurns: number;
  emit: (events: NewExecutionEvent[]) => void | Promise<void>;
  /** Asked between model events: a reason to stop now (interrupt, cap, budget), or null. */
  shouldStop: (usage: TokenUsage) => Exclude<RunStopReason, 'end_turn'> | null;
  signal?: AbortSignal;
  /**
   * Called before each tool call (with the round's answers so far) and once a round is answered:
   * the conversation so far and what it cost, so a run cut off later goes on from here. Each call
   * is made after the checkpoint that names it, so a cut-off turn calls again only the call that
   * was under way, never one already answered, and never asks the model for a round again.
   */
  checkpoint?: (state: { messages: ModelMessage[]; usage: TokenUsage; round?: ToolRound }) => void;
  /** A round cut off in a checkpoint: its calls without a result are made before anything else. */
  round?: ToolRound;
  /** Waits before retrying a request the provider refused for a transient reason; one retry each. */
  retryDelaysMs?: readonly number[];
}

/** Rate limits and overloads usually clear within seconds; past these the run fails visibly. */
const RETRY_DELAYS_MS = [1_000, 4_000];

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

export interface AgentLoopResult {
  stopReason: RunStopReason;
  messages: ModelMessage[];
  /** The final assistant text of the run. */
  text: string;
  usage: TokenUsage;
  error?: string;
}

/**
 * Runs one user turn: model request, tool calls, model request... until the model ends its
 * turn, something asks to stop, or `maxTurns` is spent. Emits exactly the spec's agent events:
 * `agent.thinking`, `agent.message` (text as it streams), `agent.tool_use`,
 * `span.model_request_end`; the caller adds the status and result events around it.
 */
export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentLoopResult> {
  const messages = [...options.messages];
  const usage: TokenUsage = { inputTokens: 0, outputTokens: 0 };
  const tools = new Map(options.tools.map((t) => [t.spec.name, t]));
  let text = '';
  const finish = (stopReason: RunStopReason, error?: string): AgentLoopResult => ({ stopReason, messages, text, usage, error });

  /**
   * Answers the tool calls of the conversation's last message after the `answered` ones, then
   * asks nothing of the model; answers a reason to stop that arose during the calls.
   */
  const answerCalls = async (answered: readonly ContentBlock[]) => {
    const calls = messages.at(-1)!.content.filter((block) => block.type === 'tool_use');
    const results = [...answered];
    for (const call of calls.slice(results.length)) {
      options.checkpoint?.({ messages, usage, round: { results } });
      const tool = tools.get(call.name);
      await options.emit([
        { type: 'agent.tool_use', payload: { name: tool?.displayName ?? call.name, tool: call.name, label: tool ? tool.label(call.input) : call.name } },
      ]);
      const result = tool
        ? await tool.run(call.input, { id: call.id }).catch((e: unknown) => ({ content: String(e), isError: true }))
        : { content: `Unknown tool ${call.name}`, isError: true };
      results.push({ type: 'tool_result', toolUseId: call.id, content: result.content, isError: result.isError });
    }
    messages.push({ role: 'user', content: results });
    options.checkpoint?.({ messages, usage });
    return options.shouldStop(usage);
  };

  if (options.round) {
    const last = messages.at(-1)!.content;
    text = last.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
    const halt = options.shouldStop(usage);
    if (halt) return finish(halt);
    const halted = await answerCalls(options.round.results);
    if (halted) return finish(halted);
  }

  const delays = options.retryDelaysMs ?? RETRY_DELAYS_MS;
  for (let turn = 0, attempt = 0; turn < options.maxTurns; turn++) {
    const calls: Extract<ContentBlock, { type: 'tool_use' }>[] = [];
    let turnText = '';
    let stop: string | undefined;
    // Whether this request produced anything: only a request that failed before its first event is retried.
    let started = false;
    try {
      for await (const event of options.provider.stream({
        model: options.provider.model,
        system: options.system,
        messages,
        tools: options.tools.map((t) => t.spec),
        maxTokens: options.maxTokens,
        signal: options.signal,
      })) {
        started = true;
        const halt = options.shouldStop(usage);
        if (halt) {
          // What was already streamed is the run's output, even when it stops early.
          if (turnText) text = turnText;
          return finish(halt);
        }
        if (event.type === 'text_delta') {
          turnText += event.text;
          await options.emit([{ type: 'agent.message', payload: { content: [{ type: 'text', text: event.text }] } }]);
        } else if (event.type === 'thinking') {
          await options.emit([{ type: 'agent.thinking', payload: {} }]);
        } else if (event.type === 'tool_use') {
          calls.push({ type: 'tool_use', id: event.id, name: event.name, input: event.input });
        } else if (event.type === 'usage') {
          usage.inputTokens += event.inputTokens;
          usage.outputTokens += event.outputTokens;
          await options.emit([{ type: 'span.model_request_end', payload: { usage: { input_tokens: event.inputTokens, output_tokens: event.outputTokens } } }]);
        } else {
          stop = event.reason;
        }
      }
    } catch (error) {
      if (!(error instanceof ProviderError)) throw error;
      const delay = delays[attempt];
      if (!error.retryable || started || delay === undefined) return finish('error', error.message);
      attempt++;
      await options.emit([
        { type: 'agent.info', payload: { message: `The model provider is busy (${error.kind}); retrying in ${delay / 1000} s`, retry: attempt } },
      ]);
      await sleep(delay);
      const halt = options.shouldStop(usage);
      if (halt) return finish(halt);
      turn--;
      continue;
    }
    attempt = 0;
    if (turnText) text = turnText;
    messages.push({ role: 'assistant', content: [...(turnText ? [{ type: 'text' as const, text: turnText }] : []), ...calls] });
    const halt = options.shouldStop(usage);
    if (halt) return finish(halt);
    if (stop !== 'tool_use' || calls.length === 0) return finish('end_turn');
    const halted = await answerCalls([]);
    if (halted) return finish(halted);
  }
  return finish('error', `The run used its ${options.maxTurns} model requests without finishing`);
}
