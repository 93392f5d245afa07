import type { ContentBlock, ModelEvent, ModelProvider, ModelRequest } from '../provider';

export const LOCAL_MODEL = 'local-1';

export const LOCAL_PROVIDER_NOTICE =
  'Running on the built-in local model (no network, deterministic): set ANTHROPIC_API_KEY or OPENAI_API_KEY for a hosted model.';

const estimateTokens = (text: string) => Math.ceil(text.length / 4);

const textOf = (blocks: ContentBlock[]) =>
  blocks
    .filter((b): b is Extract<ContentBlock, { type: 'text' }> => b.type === 'text')
    .map((b) => b.text)
    .join('\n');

/** The skill's name for the heading: its first Markdown heading, else its first line. */
const skillTitle = (system: string) =>
  (/^#+\s+(.+)$/m.exec(system)?.[1] ?? system.split('\n').find((l) => l.trim())?.replace(/^You are (an? )?/i, '') ?? 'Response')
    .replace(/[.:]+$/, '')
    .slice(0, 80);

/** The input's sentences (or lines), the material for a deterministic structured answer. */
const pointsOf = (input: string) =>
  input
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.trim())
    .filter((s) => s.length > 3)
    .slice(0, 6);

function answer(system: string, input: string): string {
  const points = pointsOf(input);
  const bullets = points.length ? points.map((p) => `- ${p}`).join('\n') : '- (the request was empty)';
  return [
    `## ${skillTitle(system)}`,
    '',
    `**Request:** ${input.trim().slice(0, 300) || '(none)'}`,
    '',
    '### Key points',
    bullets,
    '',
    '### Summary',
    `Worked through ${points.length} point${points.length === 1 ? '' : 's'} of the request following the skill's instructions.`,
  ].join('\n');
}

/**
 * A deterministic model with no network: the default when no provider key is configured.
 * Turn one calls `write_artifact` (when offered) with a digest of the request; the next turn
 * streams a structured answer word by word, `delayMs` apart. Same input, same events.
 */
export class LocalProvider implements ModelProvider {
  readonly name = 'local' as const;
  readonly model = LOCAL_MODEL;

  constructor(private readonly delayMs = 0) {}

  async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    const lastUser = [...request.messages].reverse().find((m) => m.role === 'user');
    const firstUser = request.messages.find((m) => m.role === 'user');
    const input = textOf(firstUser?.content ?? []);
    const promptTokens = estimateTokens(request.system + request.messages.map((m) => JSON.stringify(m.content)).join(''));
    const toolAnswered = lastUser?.content.some((b) => b.type === 'tool_result') ?? false;

    if (!toolAnswered && request.tools.some((t) => t.name === 'write_artifact')) {
      const content = `# Notes\n\n${pointsOf(input).map((p) => `- ${p}`).join('\n') || '- (empty request)'}\n`;
      yield { type: 'thinking' };
      yield { type: 'tool_use', id: 'local_tool_1', name: 'write_artifact', input: { name: 'notes.md', content } };
      yield { type: 'usage', inputTokens: promptTokens, outputTokens: estimateTokens(content) };
      yield { type: 'stop', reason: 'tool_use' };
      return;
    }

    const text = answer(request.system, input);
    const words = text.split(/(?<=\s)/);
    let emitted = '';
    for (const word of words) {
      if (request.signal?.aborted) break;
      if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
      emitted += word;
      yield { type: 'text_delta', text: word };
    }
    yield { type: 'usage', inputTokens: promptTokens, outputTokens: estimateTokens(emitted) };
    yield { type: 'stop', reason: 'end_turn' };
  }
}
