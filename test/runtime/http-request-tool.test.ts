import { env } from 'cloudflare:workers';
import { describe, expect, inject, it } from 'vitest';
import { runTools } from '../../workers/runtime/tools';
import { turnOf } from '../helpers/turns';
import { shardDbOf } from '../../workers/lib/db';

const SECRETS = [{ envVar: 'API_TOKEN', value: 'tok-live-0123456789', origins: [inject('fixtureOrigin')] }];
const turn = turnOf(null);
// No workspace: the turn names shard 1, which http_request never reads.
const db = shardDbOf(env, turn.actor.shard);
const httpTool = (secrets = SECRETS) => runTools(db, env, turn, secrets).find((t) => t.spec.name === 'http_request')!;

describe('the http_request run tool', () => {
  it('sends a bound secret filled in, in a header to its origin, and hands the model the answer with every value masked', async () => {
    const result = await httpTool().run({
      url: `${inject('fixtureOrigin')}/echo`,
      method: 'post',
      headers: { authorization: 'Bearer ${API_TOKEN}', 'x-plain': 'visible' },
      body: 'plain',
    });
    expect(result.isError).toBe(false);
    expect(result.content.startsWith('HTTP 200\n\n')).toBe(true);
    const echoed = JSON.parse(result.content.slice('HTTP 200\n\n'.length));
    // The fixture saw the real value: it comes back, and only the masking hides it.
    expect(echoed).toMatchObject({
      method: 'POST',
      headers: { authorization: 'Bearer [secret API_TOKEN]', 'x-plain': 'visible' },
      body: 'plain',
    });
    expect(result.content).not.toContain('tok-live');
  });

  it('labels the call with what the model wrote, never a value', () => {
    expect(httpTool().label({ url: 'https://api.example.test/v1?key=${API_TOKEN}', method: 'get' })).toBe('GET https://api.example.test/v1?key=${API_TOKEN}');
  });

  it('answers the model with an error for an unbound secret, a bad method, a non-https URL or a host that cannot be reached', async () => {
    const tool = httpTool();
    expect(await tool.run({ url: `${inject('fixtureOrigin')}/echo`, headers: { authorization: '${OTHER}' } })).toEqual({
      content: 'No secret OTHER is bound to this skill',
      isError: true,
    });
    expect(await tool.run({ url: `${inject('fixtureOrigin')}/echo`, method: 'TRACE' })).toMatchObject({
      isError: true,
      content: expect.stringContaining('method must be one of'),
    });
    expect(await tool.run({ url: 'http://example.test/' })).toEqual({ content: 'url must be an https URL', isError: true });
    expect(await tool.run({ url: 'not a url' })).toEqual({ content: 'url is not a URL', isError: true });
    expect(await tool.run({ url: 'http://127.0.0.1:1/' })).toEqual({ content: 'http://127.0.0.1:1/ could not be reached', isError: true });
  });

  it('reports a non-2xx answer as a tool error with its status', async () => {
    const result = await httpTool().run({ url: `${inject('fixtureOrigin')}/no-such-path` });
    expect(result).toMatchObject({ isError: true, content: expect.stringMatching(/^HTTP 404/) });
  });
});
