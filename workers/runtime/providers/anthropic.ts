import type { ContentBlock, ModelEvent, ModelProvider, ModelRequest, StopReason } from '../provider';
import { ProviderError } from '../provider';
import { type HostedOptions, parseData, parseToolInput, postEventStream, streamError } from './http';

export const ANTHROPIC_DEFAULT_MODEL = 'claude-sonnet-5';
export const ANTHROPIC_BASE_URL = 'https://api.anthropic.com';
export const ANTHROPIC_VERSION = '2023-06-01';
const LABEL = 'Anthropic';

type Usage = {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
};

/** Our blocks in the Messages API's shapes. */
function toAnthropicBlock(block: ContentBlock): Record<string, unknown> {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'tool_use':
      return { type: 'tool_use', id: block.id, name: block.name, input: block.input };
    case 'tool_result':
      return { type: 'tool_result', tool_use_id: block.toolUseId, content: block.content, ...(block.isError ? { is_error: true } : {}) };
  }
}

/**
 * The Messages API request for `request`. The API refuses empty text blocks and wants a user
 * message's `tool_result` blocks before its text, so empty text is dropped and results go first.
 * Thinking is turned off: a thinking model's blocks (with their signatures) would have to be sent
 * back with every tool result, and the loop does not keep them (see ModelEvent `thinking`).
 */
export function anthropicRequestBody(request: ModelRequest): Record<string, unknown> {
  const messages = request.messages
    .map((message) => {
      const blocks = message.content.filter((b) => b.type !== 'text' || b.text !== '');
      const ordered = [...blocks.filter((b) => b.type === 'tool_result'), ...blocks.filter((b) => b.type !== 'tool_result')];
      return { role: message.role, content: ordered.map(toAnthropicBlock) };
    })
    .filter((message) => message.content.length > 0);
  return {
    model: request.model,
    max_tokens: request.maxTokens,
    ...(request.system ? { system: request.system } : {}),
    messages,
    ...(request.tools.length ? { tools: request.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema })) } : {}),
    thinking: { type: 'disabled' },
    stream: true,
  };
}

const STOP_REASONS: Record<string, StopReason> = {
  end_turn: 'end_turn',
  stop_sequence: 'end_turn',
  tool_use: 'tool_use',
  max_tokens: 'max_tokens',
  model_context_window_exceeded: 'max_tokens',
};

type Block =
  | { kind: 'text' }
  /** `input` is the block's start value, used when no `input_json_delta` follows (some gateways). */
  | { kind: 'tool_use'; id: string; name: string; input: Record<string, unknown>; json: string }
  | { kind: 'other' };

/**
 * Claude through the Messages API, streaming (`POST {baseUrl}/v1/messages`). The SSE events are
 * `message_start` (input tokens), `content_block_start|delta|stop` for text, tool_use (its
 * `input_json_delta` pieces are joined and parsed at the block's stop) and thinking (announced,
 * never shown), `message_delta` (stop reason, output tokens), `message_stop`, `ping`, and `error`.
 */
export class AnthropicProvider implements ModelProvider {
  readonly name = 'anthropic' as const;
  readonly model: string;
  readonly #apiKey: string;
  readonly #url: string;

  /** `baseUrl` is what comes before `/v1/messages`. */
  constructor(options: HostedOptions) {
    this.#apiKey = options.apiKey;
    this.model = options.model ?? ANTHROPIC_DEFAULT_MODEL;
    this.#url = `${(options.baseUrl ?? ANTHROPIC_BASE_URL).replace(/\/+$/, '')}/v1/messages`;
  }

  async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    const headers = { 'x-api-key': this.#apiKey, 'anthropic-version': ANTHROPIC_VERSION };
    const blocks = new Map<number, Block>();
    const usage = { input: 0, output: 0 };
    let stop: StopReason = 'end_turn';
    const countUsage = (u: Usage | undefined) => {
      if (!u) return;
      // Cache reads and writes are input too; with no cache_control in our requests they are 0.
      if (u.input_tokens != null) usage.input = u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
      if (u.output_tokens != null) usage.output = u.output_tokens;
    };

    for await (const message of postEventStream(LABEL, this.#url, headers, anthropicRequestBody(request), request.signal)) {
      const data = parseData(LABEL, message.data);
      const index = typeof data.index === 'number' ? data.index : -1;
      switch (message.event ?? data.type) {
        case 'message_start':
          countUsage((data.message as { usage?: Usage } | undefined)?.usage);
          break;
        case 'content_block_start': {
          const block = (data.content_block ?? {}) as { type?: string; text?: string; id?: string; name?: string; input?: Record<string, unknown> };
          if (block.type === 'text') {
            blocks.set(index, { kind: 'text' });
            if (block.text) yield { type: 'text_delta', text: block.text };
          } else if (block.type === 'tool_use') {
            blocks.set(index, { kind: 'tool_use', id: String(block.id), name: String(block.name), input: block.input ?? {}, json: '' });
          } else {
            blocks.set(index, { kind: 'other' });
            if (block.type === 'thinking' || block.type === 'redacted_thinking') yield { type: 'thinking' };
          }
          break;
        }
        case 'content_block_delta': {
          const delta = (data.delta ?? {}) as { type?: string; text?: string; partial_json?: string };
          const block = blocks.get(index);
          if (delta.type === 'text_delta' && block?.kind === 'text' && delta.text) yield { type: 'text_delta', text: delta.text };
          else if (delta.type === 'input_json_delta' && block?.kind === 'tool_use') block.json += delta.partial_json ?? '';
          // thinking_delta, signature_delta, citations_delta: nothing to show.
          break;
        }
        case 'content_block_stop': {
          const block = blocks.get(index);
          if (block?.kind === 'tool_use') {
            const input = block.json.trim() ? parseToolInput(LABEL, block.name, block.json) : block.input;
            yield { type: 'tool_use', id: block.id, name: block.name, input };
          }
          blocks.delete(index);
          break;
        }
        case 'message_delta': {
          const reason = (data.delta as { stop_reason?: string } | undefined)?.stop_reason;
          if (reason) stop = STOP_REASONS[reason] ?? 'end_turn';
          countUsage(data.usage as Usage | undefined);
          break;
        }
        case 'message_stop':
          yield { type: 'usage', inputTokens: usage.input, outputTokens: usage.output };
          yield { type: 'stop', reason: stop };
          return;
        case 'error':
          throw streamError(LABEL, data.error);
        default:
          // `ping` and event types added later.
          break;
      }
    }
    throw new ProviderError('stream', `${LABEL}: the stream ended before message_stop`);
  }
}
