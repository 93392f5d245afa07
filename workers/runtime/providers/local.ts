import type { ContentBlock, ModelEvent, ModelMessage, ModelProvider, ModelRequest } from '../provider';
import { estimateTokens } from '../provider';
import { sleep } from '../../lib/clock';

export const LOCAL_MODEL = 'local-1';

/** The `agent.info` text of every run the local provider serves. */
export const LOCAL_PROVIDER_NOTICE =
  'Running on the built-in local model (no network, deterministic): set ANTHROPIC_API_KEY or OPENAI_API_KEY for a hosted model.';

/** The tool the first turn calls, when the request offers it. */
const ARTIFACT_TOOL = 'write_artifact';
const MAX_POINTS = 6;
const MAX_TERMS = 5;
const MAX_STEPS = 3;

const STOPWORDS = new Set(
  'about above after again also among and any are because been before being below between both but can could did does doing down during each few for from further had has have having her here hers him his how into its itself just more most much must need needs not now off once only other our ours out over own same she should some such than that the their theirs them then there these they this those through too under until very was were what when where which while who whom why will with would you your yours'.split(
    ' ',
  ),
);

const textOf = (blocks: ContentBlock[]) => blocks.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n');

/** Everything the model reads, as text: what the input token estimate counts. */
const promptText = (request: ModelRequest) =>
  request.system +
  request.messages
    .flatMap((m) => m.content)
    .map((b) => (b.type === 'text' ? b.text : b.type === 'tool_use' ? b.name + JSON.stringify(b.input) : b.content))
    .join('');

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();
const stripMarkdown = (text: string) => text.replace(/[*_`#>]+/g, '').trim();
const capitalise = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/**
 * The skill's name for the heading: a Markdown heading on its first line, else the role of a
 * "You are a …" opening (cut before "who", "that" or the first clause), else its first line.
 */
function skillTitle(system: string): string {
  const first =
    system
      .split('\n')
      .find((line) => line.trim())
      ?.trim() ?? '';
  const heading = /^#+\s+(.+)$/.exec(first)?.[1];
  const role = /^you are (?:an? |the )?(.+)$/i.exec(first)?.[1]?.split(/\s+(?:who|that|which)\s+|[.,;:!?](?:\s|$)/)[0];
  const title = stripMarkdown(heading ?? role ?? first).replace(/[.:]+$/, '');
  return title ? capitalise(title).slice(0, 80) : 'Response';
}

/** The skill's first few numbered or bulleted steps, each cut to its first clause. */
const skillSteps = (system: string) =>
  system
    .split('\n')
    .flatMap((line) => {
      const item = /^\s*(?:\d+[.)]|[-*])\s+(.+)$/.exec(line)?.[1];
      const clause =
        item &&
        stripMarkdown(item)
          .split(/[.:;](?:\s|$)/)[0]
          ?.trim();
      return clause ? [clause] : [];
    })
    .slice(0, MAX_STEPS);

/** The request's sentences (or lines): the answer's bullet points. */
const pointsOf = (input: string) =>
  input
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => oneLine(s.replace(/^\s*(?:[-*]|\d+[.)])\s+/, '')))
    .filter((s) => s.length > 3)
    .slice(0, MAX_POINTS);

/** The request's most frequent words of four letters or more, ties in order of appearance. */
function termsOf(input: string): string[] {
  const counts = new Map<string, number>();
  for (const word of input.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}'-]{3,}/gu) ?? []) {
    if (!STOPWORDS.has(word)) counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, MAX_TERMS)
    .map(([word]) => word);
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** A short digest of the request: what the first turn saves with `write_artifact`. */
function notes(system: string, input: string): string {
  const points = pointsOf(input);
  const terms = termsOf(input);
  return [
    `# Notes: ${skillTitle(system)}`,
    '',
    ...(points.length ? points.map((p) => `- ${p}`) : ['- (the request was empty)']),
    ...(terms.length ? ['', `Focus terms: ${terms.join(', ')}`] : []),
    '',
  ].join('\n');
}

/** The final answer: a heading, the request restated, its points, the skill's approach, a summary. */
function answer(system: string, input: string): string {
  const title = skillTitle(system);
  const points = pointsOf(input);
  const terms = termsOf(input);
  const steps = skillSteps(system);
  const request = oneLine(input);
  return [
    `## ${title}`,
    '',
    `**Request:** ${request.length > 300 ? `${request.slice(0, 300)}…` : request || '(none)'}`,
    '',
    '### Key points',
    ...(points.length ? points.map((p) => `- ${p}`) : ['- (the request was empty)']),
    ...(terms.length ? ['', `**Focus terms:** ${terms.join(', ')}`] : []),
    ...(steps.length ? ['', '### Approach', ...steps.map((s, i) => `${i + 1}. ${s}`)] : []),
    '',
    '### Summary',
    `Covered ${plural(points.length, 'point')} of the request as ${title}` +
      (terms.length ? `, centred on ${terms.slice(0, 3).join(', ')}.` : '.') +
      ' This answer comes from the built-in local model; a hosted model gives a full response.',
  ].join('\n');
}

/** The latest user message that carries text: what this turn answers. */
const latestText = (messages: ModelMessage[]) =>
  textOf([...messages].reverse().find((m) => m.role === 'user' && m.content.some((b) => b.type === 'text'))?.content ?? []);

/**
 * A deterministic model with no network: the default when no provider key is configured. When
 * the request offers `write_artifact` and the latest message is not a tool result, it calls the
 * tool with a digest of the request (`notes.md`) and stops with `tool_use`; otherwise it streams
 * a structured answer shaped by the skill's prompt and the latest user text, word by word,
 * `delayMs` apart, and stops with `end_turn`. Usage is estimated at four characters a token.
 * Same request, same events.
 */
export class LocalProvider implements ModelProvider {
  readonly name = 'local' as const;
  readonly model = LOCAL_MODEL;

  constructor(private readonly delayMs = 0) {}

  async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    request.signal?.throwIfAborted();
    const input = latestText(request.messages);
    const inputTokens = estimateTokens(promptText(request));
    const answered = request.messages.at(-1)?.content.some((b) => b.type === 'tool_result') ?? false;

    if (!answered && request.tools.some((t) => t.name === ARTIFACT_TOOL)) {
      const args = { name: 'notes.md', content: notes(request.system, input) };
      yield { type: 'thinking' };
      yield { type: 'tool_use', id: `local_call_${request.messages.length}`, name: ARTIFACT_TOOL, input: args };
      yield { type: 'usage', inputTokens, outputTokens: estimateTokens(ARTIFACT_TOOL + JSON.stringify(args)) };
      yield { type: 'stop', reason: 'tool_use' };
      return;
    }

    const text = answer(request.system, input);
    for (const word of text.split(/(?<=\s)/)) {
      if (this.delayMs > 0) await sleep(this.delayMs);
      request.signal?.throwIfAborted();
      yield { type: 'text_delta', text: word };
    }
    yield { type: 'usage', inputTokens, outputTokens: estimateTokens(text) };
    yield { type: 'stop', reason: 'end_turn' };
  }
}
