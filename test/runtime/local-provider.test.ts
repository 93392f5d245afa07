import { describe, expect, it } from 'vitest';
import type { ModelEvent, ModelRequest } from '../../workers/runtime/provider';
import { LOCAL_MODEL, LocalProvider } from '../../workers/runtime/providers/local';
import { assistantMessage, collect, TOOLS } from './model-requests';

const SKILL = `You are a release-notes editor who writes for customers, not engineers.

## Process
1. **Group** the changes by theme: features, fixes, breaking changes.
2. Rewrite each change as a benefit. Keep it short.
3. Flag anything that needs a migration step.
4. A fourth step that is not listed.`;
const INPUT = 'Release 2.4 adds dark mode. Release 2.4 fixes the export crash! Exports now keep their filters.';

const request = (messages: ModelRequest['messages'], tools = TOOLS): ModelRequest => ({ model: LOCAL_MODEL, system: SKILL, messages, tools, maxTokens: 1024 });
const ask = (text: string) => ({ role: 'user' as const, content: [{ type: 'text' as const, text }] });
const textOf = (events: ModelEvent[]) => events.flatMap((e) => (e.type === 'text_delta' ? [e.text] : [])).join('');

describe('the local provider', () => {
  it('first calls write_artifact with a digest, then answers the tool result with structured text', async () => {
    const local = new LocalProvider();
    const first = await collect(local, request([ask(INPUT)]));
    const notes =
      '# Notes: Release-notes editor\n\n- Release 2.4 adds dark mode.\n- Release 2.4 fixes the export crash!\n- Exports now keep their filters.\n\nFocus terms: release, adds, dark, mode, fixes\n';
    expect(first).toEqual([
      { type: 'thinking' },
      { type: 'tool_use', id: 'local_call_1', name: 'write_artifact', input: { name: 'notes.md', content: notes } },
      {
        type: 'usage',
        inputTokens: Math.ceil((SKILL.length + INPUT.length) / 4),
        outputTokens: Math.ceil(('write_artifact' + JSON.stringify({ name: 'notes.md', content: notes })).length / 4),
      },
      { type: 'stop', reason: 'tool_use' },
    ]);

    const messages = [
      ask(INPUT),
      assistantMessage(first),
      { role: 'user' as const, content: [{ type: 'tool_result' as const, toolUseId: 'local_call_1', content: 'Saved notes.md' }] },
    ];
    const second = await collect(local, request(messages));
    const text = textOf(second);
    expect(text).toBe(
      [
        '## Release-notes editor',
        '',
        `**Request:** ${INPUT}`,
        '',
        '### Key points',
        '- Release 2.4 adds dark mode.',
        '- Release 2.4 fixes the export crash!',
        '- Exports now keep their filters.',
        '',
        '**Focus terms:** release, adds, dark, mode, fixes',
        '',
        '### Approach',
        '1. Group the changes by theme',
        '2. Rewrite each change as a benefit',
        '3. Flag anything that needs a migration step',
        '',
        '### Summary',
        'Covered 3 points of the request as Release-notes editor, centred on release, adds, dark. This answer comes from the built-in local model; a hosted model gives a full response.',
      ].join('\n'),
    );
    // Word by word: every delta is one word with its trailing whitespace.
    const deltas = second.filter((e) => e.type === 'text_delta');
    expect(deltas.length).toBe(text.split(/(?<=\s)/).length);
    expect(deltas.every((e) => /^\S*\s*$/.test(e.text))).toBe(true);
    const input =
      SKILL +
      messages
        .flatMap((m) => m.content)
        .map((b) => (b.type === 'text' ? b.text : b.type === 'tool_use' ? b.name + JSON.stringify(b.input) : b.content))
        .join('');
    expect(second.slice(-2)).toEqual([
      { type: 'usage', inputTokens: Math.ceil(input.length / 4), outputTokens: Math.ceil(text.length / 4) },
      { type: 'stop', reason: 'end_turn' },
    ]);
  });

  it('is deterministic: the same request gives the same events, another input another answer', async () => {
    const a = await collect(new LocalProvider(), request([ask(INPUT)], []));
    const b = await collect(new LocalProvider(), request([ask(INPUT)], []));
    expect(b).toEqual(a);
    const other = await collect(new LocalProvider(), request([ask('Write a haiku about autumn leaves.')], []));
    expect(textOf(other)).not.toBe(textOf(a));
    expect(textOf(other)).toContain('- Write a haiku about autumn leaves.');
  });

  it('answers without a tool call when write_artifact is not offered, and follows the latest user text', async () => {
    const events = await collect(
      new LocalProvider(),
      request([ask('First question.'), { role: 'assistant', content: [{ type: 'text', text: 'First answer.' }] }, ask('Second question here.')], []),
    );
    expect(events.some((e) => e.type === 'tool_use')).toBe(false);
    expect(textOf(events)).toContain('**Request:** Second question here.');
    expect(events.at(-1)).toEqual({ type: 'stop', reason: 'end_turn' });
  });

  it('takes its heading from a Markdown title line, and copes with an empty prompt and input', async () => {
    const titled = await collect(new LocalProvider(), { ...request([ask('Notes.')], []), system: '# Meeting Summarizer\nYou summarise.' });
    expect(textOf(titled).startsWith('## Meeting Summarizer\n')).toBe(true);
    const empty = await collect(new LocalProvider(), { ...request([ask('')], []), system: '' });
    expect(textOf(empty)).toContain('## Response');
    expect(textOf(empty)).toContain('- (the request was empty)');
  });

  it('paces its words by delayMs, and stops when the request is aborted', async () => {
    const started = Date.now();
    await collect(new LocalProvider(2), request([ask('One two three.')], []));
    expect(Date.now() - started).toBeGreaterThanOrEqual(2 * 10);

    const controller = new AbortController();
    const seen: ModelEvent[] = [];
    const run = async () => {
      for await (const event of new LocalProvider(1).stream({ ...request([ask(INPUT)], []), signal: controller.signal })) {
        seen.push(event);
        if (seen.length === 3) controller.abort(new Error('interrupted'));
      }
    };
    await expect(run()).rejects.toThrow('interrupted');
    expect(seen).toHaveLength(3);
  });
});
