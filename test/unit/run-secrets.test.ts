import { describe, expect, it } from 'vitest';
import { eventRedactor, redactDeep, redactSecrets, refuseSecretsIn, resolveSecrets, secretsNotice } from '../../workers/runtime/run-secrets';

const API = 'https://api.example.test';
const SECRETS = [
  { envVar: 'API_TOKEN', value: 'tok-1234567890', origins: [API] },
  { envVar: 'SHORT', value: 'tok-12', origins: [API, 'https://other.example.test'] },
  { envVar: 'NOWHERE', value: 'tok-nowhere', origins: [] },
];
const msg = (text: string) => ({ type: 'agent.message', payload: { content: [{ type: 'text', text }] } });
const textOf = (events: { type: string; payload: object }[]) =>
  events
    .filter((e) => e.type === 'agent.message')
    .map((e) => (e.payload as { content: { text: string }[] }).content[0]!.text)
    .join('');

describe('resolving and masking a run’s secrets', () => {
  it('fills ${NAME} with the bound value for an origin it is bound to, and refuses an unbound name', () => {
    expect(resolveSecrets('Bearer ${API_TOKEN}; ${SHORT}', API, SECRETS)).toBe('Bearer tok-1234567890; tok-12');
    expect(resolveSecrets('no placeholders, $API_TOKEN, ${lower}', API, SECRETS)).toBe('no placeholders, $API_TOKEN, ${lower}');
    expect(() => resolveSecrets('${MISSING}', API, SECRETS)).toThrow('No secret MISSING is bound to this skill');
  });

  it('refuses a secret for an origin it is not bound to, one bound to no origin, and any in a url or body, naming no value', () => {
    expect(() => resolveSecrets('${API_TOKEN}', 'https://other.example.test', SECRETS)).toThrow(
      'API_TOKEN may be sent only to https://api.example.test, not to https://other.example.test',
    );
    expect(() => resolveSecrets('${NOWHERE}', API, SECRETS)).toThrow('NOWHERE is bound to no site, so it is never sent');
    expect(() => refuseSecretsIn('https://api.example.test/?k=${API_TOKEN}', 'url', SECRETS)).toThrow(
      'API_TOKEN cannot go in the url: a secret is sent only in a header',
    );
    expect(() => refuseSecretsIn('x ${MISSING}', 'body', SECRETS)).toThrow('No secret MISSING is bound to this skill');
    expect(() => refuseSecretsIn('no placeholders, $API_TOKEN', 'body', SECRETS)).not.toThrow();
  });

  it('masks every occurrence, the longest value first, in text and in any JSON value', () => {
    expect(redactSecrets('a tok-1234567890 b tok-12 c', SECRETS)).toBe('a [secret API_TOKEN] b [secret SHORT] c');
    // Overlapping values are masked as one span: no character of either shows.
    expect(
      redactSecrets('xxabcdefgyy', [
        { envVar: 'A', value: 'abc' },
        { envVar: 'B', value: 'cdefg' },
      ]),
    ).toBe('xx[secret A, B]yy');
    expect(redactDeep({ list: ['x tok-12'], nested: { v: 'tok-1234567890' }, n: 3 }, SECRETS)).toEqual({
      list: ['x [secret SHORT]'],
      nested: { v: '[secret API_TOKEN]' },
      n: 3,
    });
  });

  it('tells the model the names, where each may go and how to use them, never the values', () => {
    const notice = secretsNotice(SECRETS);
    expect(notice).toContain(
      'API_TOKEN (sent only to https://api.example.test); SHORT (sent only to https://api.example.test, https://other.example.test); NOWHERE (never sent: bound to no site)',
    );
    expect(notice).toContain('${NAME} in a header value');
    expect(notice).not.toContain('tok-');
    expect(secretsNotice([])).toBe('');
  });
});

describe('eventRedactor', () => {
  it('masks a value streamed across several deltas and keeps every other character and the event order', () => {
    const redactor = eventRedactor(SECRETS);
    const out = [
      ...redactor.push([msg('The token is tok-12345')]),
      ...redactor.push([msg('67890 and')]),
      ...redactor.push([msg(' more.'), { type: 'agent.tool_use', payload: { name: 'x', tool: 'x', label: 'uses tok-1234567890' } }]),
      ...redactor.push([msg('After.')]),
      ...redactor.flush(),
    ];
    expect(JSON.stringify(out)).not.toContain('tok-12');
    const toolAt = out.findIndex((e) => e.type === 'agent.tool_use');
    expect(textOf(out.slice(0, toolAt))).toBe('The token is [secret API_TOKEN] and more.');
    expect(out[toolAt]!.payload).toEqual({ name: 'x', tool: 'x', label: 'uses [secret API_TOKEN]' });
    expect(textOf(out.slice(toolAt))).toBe('After.');
  });

  it('passes events through untouched when no secret is bound', () => {
    const redactor = eventRedactor([]);
    const events = [msg('tok-1234567890')];
    expect(redactor.push(events)).toBe(events);
    expect(redactor.flush()).toEqual([]);
  });
});

describe('eventRedactor with overlapping values', () => {
  it('keeps back a chain of overlapping values until the whole chain can be masked', () => {
    const secrets = [
      { envVar: 'A', value: 'abc' },
      { envVar: 'B', value: 'cdefg' },
    ];
    const redactor = eventRedactor(secrets);
    const out = [...redactor.push([msg('xxabcde')]), ...redactor.push([msg('fgyy')]), ...redactor.flush()];
    expect(textOf(out)).toBe('xx[secret A, B]yy');
  });
});
