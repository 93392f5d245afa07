import { expect } from 'vitest';
import { type ModelEvent, type ModelMessage, type ModelProvider, type ModelRequest, ProviderError, type ToolSpec } from '../../workers/runtime/provider';

/** The conversation the fixture server's model scenarios expect (test/setup/fixture-server.ts). */
export const SYSTEM = 'You are a careful assistant.';
export const USER_TEXT = 'Summarise: we ship on Friday. Ana writes the notes.';
/** The text both providers' `text` scenarios stream, in two deltas (one with non-ASCII letters). */
export const TEXT_DELTAS: ModelEvent[] = [
  { type: 'text_delta', text: 'We ship on Friday; ' },
  { type: 'text_delta', text: 'Ana writes the notes, déjà prêtes.' },
];
export const NOTES = { name: 'notes.md', content: '# Notes\n- We ship on Friday.\n- Ana writes the notes.' };

export const TOOLS: ToolSpec[] = [
  {
    name: 'write_artifact',
    description: 'Save a file as an artifact.',
    inputSchema: { type: 'object', properties: { name: { type: 'string' }, content: { type: 'string' } }, required: ['name', 'content'] },
  },
  {
    name: 'append_memory',
    description: 'Append a note to working memory.',
    inputSchema: { type: 'object', properties: { content: { type: 'string' } }, required: ['content'] },
  },
];

export const firstTurn = (model: string, messages: ModelMessage[] = [{ role: 'user', content: [{ type: 'text', text: USER_TEXT }] }]): ModelRequest => ({
  model,
  system: SYSTEM,
  messages,
  tools: TOOLS,
  maxTokens: 1024,
});

export async function collect(provider: ModelProvider, request: ModelRequest): Promise<ModelEvent[]> {
  const events: ModelEvent[] = [];
  for await (const event of provider.stream(request)) events.push(event);
  return events;
}

/** Runs the request to its failure: the events yielded before it, and the ProviderError. */
export async function failure(provider: ModelProvider, request: ModelRequest): Promise<{ events: ModelEvent[]; error: ProviderError }> {
  const events: ModelEvent[] = [];
  try {
    for await (const event of provider.stream(request)) events.push(event);
  } catch (error) {
    expect(error).toBeInstanceOf(ProviderError);
    return { events, error: error as ProviderError };
  }
  throw new Error(`expected a ProviderError, got ${JSON.stringify(events)}`);
}

/** The assistant message a loop records from a turn's events: its text, then its tool calls. */
export function assistantMessage(events: ModelEvent[]): ModelMessage {
  const text = events.flatMap((e) => (e.type === 'text_delta' ? [e.text] : [])).join('');
  const calls = events.flatMap((e) => (e.type === 'tool_use' ? [{ type: 'tool_use' as const, id: e.id, name: e.name, input: e.input }] : []));
  return { role: 'assistant', content: [...(text ? [{ type: 'text' as const, text }] : []), ...calls] };
}
