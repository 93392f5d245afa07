/**
 * The one interface every model provider implements:
 * `anthropic`, `openai` and the built-in `local`. The agent loop sees only these types.
 */
export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; toolUseId: string; content: string; isError?: boolean };

export interface ModelMessage {
  role: 'user' | 'assistant';
  content: ContentBlock[];
}

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the tool's input. */
  inputSchema: Record<string, unknown>;
}

export interface ModelRequest {
  model: string;
  system: string;
  messages: ModelMessage[];
  tools: ToolSpec[];
  maxTokens: number;
  signal?: AbortSignal;
}

export type StopReason = 'end_turn' | 'tool_use' | 'max_tokens';

export type ModelEvent =
  | { type: 'text_delta'; text: string }
  /** The model is reasoning; its content is not exposed. */
  | { type: 'thinking' }
  /** A complete tool call, input parsed. */
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  /** Once per request, at its end. */
  | { type: 'usage'; inputTokens: number; outputTokens: number }
  | { type: 'stop'; reason: StopReason };

export type ProviderName = 'anthropic' | 'openai' | 'local';

/**
 * A finished request yields its text, thinking and tool calls in order, then one `usage`, then
 * one `stop`. A failure throws `ProviderError`, possibly after some events were yielded.
 * Aborting `request.signal` ends the stream by throwing the signal's reason (not a ProviderError).
 */
export interface ModelProvider {
  readonly name: ProviderName;
  readonly model: string;
  stream(request: ModelRequest): AsyncIterable<ModelEvent>;
}

export type ProviderErrorKind = 'auth' | 'rate_limited' | 'overloaded' | 'bad_request' | 'network' | 'stream';

/**
 * `auth`: the key was refused (401, 403). `rate_limited`: 429. `overloaded`: 503, 529 or an
 * `overloaded_error` in the stream. `bad_request`: any other 4xx. `network`: the host could not
 * be reached, the connection broke, or another 5xx. `stream`: the stream reported an error after
 * a 200, was malformed, or ended before it finished. `retryable` is true for the transient kinds.
 */
export class ProviderError extends Error {
  readonly kind: ProviderErrorKind;
  readonly retryable: boolean;
  constructor(kind: ProviderErrorKind, message: string) {
    super(message);
    this.name = 'ProviderError';
    this.kind = kind;
    this.retryable = kind === 'rate_limited' || kind === 'overloaded' || kind === 'network';
  }
}

/** The rough token count of some text (about four characters a token), for estimates only. */
export const estimateTokens = (text: string): number => Math.ceil(text.length / 4);
