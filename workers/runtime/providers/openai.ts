import type { ContentBlock, ModelEvent, ModelProvider, ModelRequest, StopReason } from '../provider';
import { estimateTokens, ProviderError } from '../provider';
import { type HostedOptions, parseData, parseToolInput, postEventStream, streamError } from './http';

export const OPENAI_DEFAULT_MODEL = 'gpt-4o-mini';
export const OPENAI_BASE_URL = 'https://api.openai.com/v1';
const LABEL = 'OpenAI-compatible API';

const textOf = (blocks: ContentBlock[]) => blocks.flatMap((b) => (b.type === 'text' && b.text ? [b.text] : [])).join('\n\n');

/**
 * Our conversation as Chat Completions messages: the system prompt first; an assistant message's
 * tool calls as `tool_calls` (arguments as JSON text); each tool result as a `role: 'tool'`
 * message right after the call it answers, before any user text of the same turn. The format has
 * no error flag for a result, so a failed one says `Error:` in front.
 */
function toOpenAIMessages(request: ModelRequest): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = request.system ? [{ role: 'system', content: request.system }] : [];
  for (const message of request.messages) {
    const text = textOf(message.content);
    if (message.role === 'assistant') {
      const calls = message.content.flatMap((b) =>
        b.type === 'tool_use' ? [{ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input) } }] : [],
      );
      if (text || calls.length) out.push({ role: 'assistant', content: text || null, ...(calls.length ? { tool_calls: calls } : {}) });
    } else {
      for (const b of message.content) {
        if (b.type === 'tool_result') out.push({ role: 'tool', tool_call_id: b.toolUseId, content: b.isError ? `Error: ${b.content}` : b.content });
      }
      if (text) out.push({ role: 'user', content: text });
    }
  }
  return out;
}

/**
 * The Chat Completions request. OpenAI's own API gets `max_completion_tokens` (its reasoning
 * models refuse `max_tokens`); other servers get `max_tokens`, which every compatible server reads.
 */
export function openaiRequestBody(request: ModelRequest, baseUrl = OPENAI_BASE_URL): Record<string, unknown> {
  const official = new URL(baseUrl).hostname === new URL(OPENAI_BASE_URL).hostname;
  return {
    model: request.model,
    messages: toOpenAIMessages(request),
    ...(request.tools.length
      ? { tools: request.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.inputSchema } })) }
      : {}),
    [official ? 'max_completion_tokens' : 'max_tokens']: request.maxTokens,
    stream: true,
    stream_options: { include_usage: true },
  };
}

const STOP_REASONS: Record<string, StopReason> = {
  stop: 'end_turn',
  content_filter: 'end_turn',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  length: 'max_tokens',
};

interface Chunk {
  choices?: {
    delta?: {
      content?: string | null;
      /** Reasoning text from self-hosted servers (vLLM, llama.cpp, Ollama, DeepSeek): announced, never shown. */
      reasoning_content?: string | null;
      reasoning?: string | null;
      tool_calls?: { index?: number; id?: string; function?: { name?: string; arguments?: string } }[];
    };
    finish_reason?: string | null;
  }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: unknown;
}

/**
 * Any Chat Completions-compatible server, streaming (`POST {baseUrl}/chat/completions` with
 * `stream_options.include_usage`). Reads `data:` chunks until `[DONE]`: content deltas, tool
 * calls accumulated by index, `finish_reason`, and the final usage chunk (empty `choices`). A
 * server that reports no usage is charged an estimate (four characters a token) rather than nothing.
 */
export class OpenAIProvider implements ModelProvider {
  readonly name = 'openai' as const;
  readonly model: string;
  readonly #apiKey: string;
  readonly #baseUrl: string;

  /** `baseUrl` is what comes before `/chat/completions`: OpenAI's, or any compatible server. */
  constructor(options: HostedOptions) {
    this.#apiKey = options.apiKey;
    this.model = options.model ?? OPENAI_DEFAULT_MODEL;
    this.#baseUrl = (options.baseUrl ?? OPENAI_BASE_URL).replace(/\/+$/, '');
  }

  async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    const body = openaiRequestBody(request, this.#baseUrl);
    const calls = new Map<number, { id: string; name: string; args: string }>();
    let usage: { inputTokens: number; outputTokens: number } | undefined;
    let stop: StopReason | undefined;
    let done = false;
    let thinking = false;
    let output = '';

    const url = `${this.#baseUrl}/chat/completions`;
    for await (const message of postEventStream(LABEL, url, { authorization: `Bearer ${this.#apiKey}` }, body, request.signal)) {
      if (message.data.trim() === '[DONE]') {
        done = true;
        break;
      }
      const chunk = parseData(LABEL, message.data) as Chunk;
      if (chunk.error) throw streamError(LABEL, chunk.error);
      if (chunk.usage) usage = { inputTokens: chunk.usage.prompt_tokens ?? 0, outputTokens: chunk.usage.completion_tokens ?? 0 };
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      const delta = choice.delta ?? {};
      if ((delta.reasoning_content || delta.reasoning) && !thinking) {
        thinking = true;
        yield { type: 'thinking' };
      }
      if (delta.content) {
        thinking = false;
        output += delta.content;
        yield { type: 'text_delta', text: delta.content };
      }
      for (const piece of delta.tool_calls ?? []) {
        thinking = false;
        const index = piece.index ?? 0;
        const call = calls.get(index) ?? { id: '', name: '', args: '' };
        if (piece.id) call.id = piece.id;
        if (piece.function?.name) call.name = piece.function.name;
        call.args += piece.function?.arguments ?? '';
        calls.set(index, call);
      }
      if (choice.finish_reason) stop = STOP_REASONS[choice.finish_reason] ?? 'end_turn';
    }
    // A server that closes without [DONE] is accepted once it has given its finish reason.
    if (!done && !stop) throw new ProviderError('stream', `${LABEL}: the stream ended before [DONE]`);

    for (const [index, call] of [...calls].sort(([a], [b]) => a - b)) {
      output += call.name + call.args;
      yield { type: 'tool_use', id: call.id || `call_${index}`, name: call.name, input: parseToolInput(LABEL, call.name, call.args) };
    }
    yield usage
      ? { type: 'usage', ...usage }
      : { type: 'usage', inputTokens: estimateTokens(JSON.stringify(body.messages)), outputTokens: estimateTokens(output) };
    // Some servers end a tool-calling turn with `stop`; the calls are what counts.
    yield { type: 'stop', reason: calls.size && stop !== 'max_tokens' ? 'tool_use' : (stop ?? 'end_turn') };
  }
}
