import { describe, expect, inject, it } from 'vitest';
import { anthropicRequestBody, AnthropicProvider } from '../../workers/runtime/providers/anthropic';
import { assistantMessage, collect, failure, firstTurn, NOTES, SYSTEM, TEXT_DELTAS, USER_TEXT } from './model-requests';

const MODEL = 'claude-sonnet-5';
const provider = (scenario: string, apiKey = inject('modelKeys').anthropic) =>
  new AnthropicProvider({ apiKey, model: MODEL, baseUrl: `${inject('fixtureOrigin')}/model/anthropic/${scenario}` });

describe('the Anthropic provider against recorded Messages API streams', () => {
  it('streams a text answer: deltas in order, usage from message_start and message_delta, then end_turn', async () => {
    expect(await collect(provider('text'), firstTurn(MODEL))).toEqual([
      ...TEXT_DELTAS,
      { type: 'usage', inputTokens: 25, outputTokens: 15 },
      { type: 'stop', reason: 'end_turn' },
    ]);
  });

  it('joins input_json_delta pieces into one parsed tool call, and sends the tool_result back in a user message', async () => {
    const first = await collect(provider('tool-use'), firstTurn(MODEL));
    expect(first).toEqual([
      { type: 'text_delta', text: "I'll save the notes first." },
      { type: 'tool_use', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'write_artifact', input: NOTES },
      { type: 'usage', inputTokens: 472, outputTokens: 89 },
      { type: 'stop', reason: 'tool_use' },
    ]);

    // The fixture answers only if the round trip arrives in Anthropic's shape (tool_result first).
    const request = firstTurn(MODEL, [
      { role: 'user', content: [{ type: 'text', text: USER_TEXT }] },
      assistantMessage(first),
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Keep it short.' },
          { type: 'tool_result', toolUseId: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', content: 'Saved notes.md' },
        ],
      },
    ]);
    expect(await collect(provider('tool-result'), request)).toEqual([
      { type: 'text_delta', text: 'Saved. We ship on Friday.' },
      { type: 'usage', inputTokens: 580, outputTokens: 9 },
      { type: 'stop', reason: 'end_turn' },
    ]);
  });

  it('announces thinking and redacted thinking without their content, and maps max_tokens', async () => {
    expect(await collect(provider('thinking'), firstTurn(MODEL))).toEqual([
      { type: 'thinking' },
      { type: 'thinking' },
      { type: 'text_delta', text: 'Friday.' },
      { type: 'usage', inputTokens: 30, outputTokens: 1024 },
      { type: 'stop', reason: 'max_tokens' },
    ]);
  });

  it('turns an error event after a 200 into a ProviderError: overloaded_error is overloaded, others are stream', async () => {
    const overloaded = await failure(provider('error-overloaded'), firstTurn(MODEL));
    expect(overloaded.events).toEqual([{ type: 'text_delta', text: 'We ship' }]);
    expect(overloaded.error).toMatchObject({ kind: 'overloaded', retryable: true, message: expect.stringContaining('Overloaded') });

    const api = await failure(provider('error-api'), firstTurn(MODEL));
    expect(api.events).toEqual([]);
    expect(api.error).toMatchObject({ kind: 'stream', retryable: false, message: expect.stringContaining('Internal server error') });

    const truncated = await failure(provider('truncated'), firstTurn(MODEL));
    expect(truncated.events).toEqual([{ type: 'text_delta', text: 'We ship' }]);
    expect(truncated.error).toMatchObject({ kind: 'stream', message: expect.stringContaining('message_stop') });
  });

  it('maps HTTP failures: 401 auth, 529 overloaded, other 4xx bad_request, a dropped connection network', async () => {
    const auth = await failure(provider('text', 'sk-ant-wrong'), firstTurn(MODEL));
    expect(auth.error).toMatchObject({ kind: 'auth', retryable: false, message: 'Anthropic answered 401: invalid x-api-key' });
    expect(auth.error.message).not.toContain('sk-ant-wrong');

    expect((await failure(provider('overloaded'), firstTurn(MODEL))).error).toMatchObject({ kind: 'overloaded', retryable: true });
    expect((await failure(provider('invalid'), firstTurn(MODEL))).error).toMatchObject({
      kind: 'bad_request',
      message: 'Anthropic answered 400: max_tokens: must be at least 1',
    });
    const unknown = new AnthropicProvider({ apiKey: 'k', baseUrl: `${inject('fixtureOrigin')}/model/anthropic/no-such-scenario` });
    expect((await failure(unknown, firstTurn(MODEL))).error.kind).toBe('bad_request');
    const dropped = await failure(provider('dropped'), firstTurn(MODEL));
    expect(dropped.events).toEqual([{ type: 'text_delta', text: 'We ship' }]);
    expect(dropped.error).toMatchObject({ kind: 'network', retryable: true });
  });

  it('converts requests: no empty text, tool_result before text, is_error only when set, no system or tools when absent', () => {
    const body = anthropicRequestBody({
      model: MODEL,
      system: '',
      tools: [],
      maxTokens: 10,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: '' },
            { type: 'tool_use', id: 't1', name: 'read_memory', input: {} },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', toolUseId: 't1', content: 'boom', isError: true }] },
      ],
    });
    expect(body).toEqual({
      model: MODEL,
      max_tokens: 10,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'read_memory', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'boom', is_error: true }] },
      ],
      thinking: { type: 'disabled' },
      stream: true,
    });
    expect(anthropicRequestBody(firstTurn(MODEL)).system).toBe(SYSTEM);
  });

  it('never exposes the key on the provider object', () => {
    const p = provider('text');
    expect(JSON.stringify(p)).not.toContain(inject('modelKeys').anthropic);
    expect(Object.values(p)).not.toContain(inject('modelKeys').anthropic);
  });
});
