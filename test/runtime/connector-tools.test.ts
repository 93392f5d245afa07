import { env } from 'cloudflare:workers';
import { describe, expect, inject, it } from 'vitest';
import type { TurnInput } from '../../workers/services/execution-events';
import { connectorRunTools } from '../../workers/runtime/connector-tools';
import { call, createKey, signUp, type TestUser } from '../helpers/api';
import { shardDbFor } from '../helpers/shards';
import { turnOf, turnOfKey } from '../helpers/turns';

async function turnWith(connector: TurnInput['connector'], connect = true) {
  const user = await signUp();
  const token = `ghp_fixture_${crypto.randomUUID().replace(/-/g, '').slice(0, 12)}`;
  if (connect) expect((await call('/api/v1/connectors/github/connect', { token: user.token, body: { token } })).status).toBe(200);
  const turn = turnOf(user, { requestId: 'req-connector-tools', connector });
  return { user, token, turn };
}

/** A grant of connector:github:read to `apiKey`, asked by the key and approved by its owner in `mode`. */
async function grant(user: TestUser, apiKey: string, mode: 'one_time' | 'session') {
  const asked = await call('/api/v1/agents/request-permission', { apiKey, body: { scope: 'connector:github:read', reason: 'to read the code', mode } });
  expect(asked.status).toBe(202);
  expect((await call(`/api/v1/agents/permission-requests/${asked.body.request_id}/approve`, { token: user.token, body: {} })).status).toBe(200);
}

const tool = async (turn: TurnInput, name: string) => connectorRunTools(await shardDbFor(turn.actor.workspaceId), env, turn).find((t) => t.spec.name === name)!;

describe('the tools of a run started with a GitHub connector', () => {
  it('are list_repository_files and read_repository_file for that repository; remote and no connector add none', async () => {
    const { user, turn } = await turnWith({ type: 'github', repo: 'octo-org/widgets' });
    const db = await shardDbFor(user.workspaceId);
    const tools = connectorRunTools(db, env, turn);
    expect(tools.map((t) => t.spec.name)).toEqual(['list_repository_files', 'read_repository_file']);
    expect(tools[0]!.spec.description).toContain('octo-org/widgets');
    expect(connectorRunTools(db, env, { ...turn, connector: { type: 'remote' } })).toEqual([]);
    expect(connectorRunTools(db, env, { ...turn, connector: undefined })).toEqual([]);
  });

  it('read a file of the fake repository, at the default branch or another ref', async () => {
    const { turn } = await turnWith({ type: 'github', repo: 'octo-org/widgets' });
    const read = await tool(turn, 'read_repository_file');
    expect(read.label({ path: 'README.md' })).toBe('octo-org/widgets/README.md');
    expect(await read.run({ path: 'README.md' })).toEqual({ content: '# Widgets\n\nThe widget factory.\n' });
    expect(await read.run({ path: 'src/lib/widget.ts', ref: 'develop' })).toEqual({
      content: 'export const widget = (name: string) => `widget v2 ${name}`;\n',
    });
    expect(await read.run({ path: 'assets/logo.png' })).toEqual({ content: 'assets/logo.png is a binary file of 11 bytes', isError: true });
    expect(await read.run({ path: 'nope.md' })).toMatchObject({ isError: true, content: expect.stringContaining('not found') });
    expect(await read.run({ path: '../etc/passwd' })).toEqual({ content: 'path or ref is not valid', isError: true });
  });

  it('list the files of the repository, under a folder', async () => {
    const { turn } = await turnWith({ type: 'github', repo: 'octo-org/widgets' });
    const list = await tool(turn, 'list_repository_files');
    const all = await list.run({});
    expect(all.isError).toBeUndefined();
    expect(all.content.split('\n')).toEqual([
      'octo-org/widgets@main: 5 files',
      'README.md (31 bytes)',
      'assets/logo.png (11 bytes)',
      'docs/guide.md (26 bytes)',
      'src/index.ts (39 bytes)',
      'src/lib/widget.ts (58 bytes)',
    ]);
    expect((await list.run({ path: 'src' })).content.split('\n')).toEqual([
      'octo-org/widgets@main: 2 files',
      'src/index.ts (39 bytes)',
      'src/lib/widget.ts (58 bytes)',
    ]);
  });

  it('act on a one-time or session grant of connector:github:read held by the launching key, spending a one-time grant once', async () => {
    const { user } = await turnWith(undefined);
    // connector:list: the repository tools are views of list-sources and get-source-content.
    const key = await createKey(user, ['tool:execute', 'connector:list']);
    const turn = { ...(await turnOfKey(user, key.key)), connector: { type: 'github' as const, repo: 'octo-org/widgets' } };
    const read = async () => (await tool(turn, 'read_repository_file')).run({ path: 'README.md' });
    const refused = { isError: true, content: expect.stringContaining('connector:github:read') };
    expect(await read()).toMatchObject(refused);
    await grant(user, key.key, 'one_time');
    expect(await read()).toEqual({ content: '# Widgets\n\nThe widget factory.\n' });
    expect(await read()).toMatchObject(refused);
    await grant(user, key.key, 'session');
    expect(await read()).toEqual({ content: '# Widgets\n\nThe widget factory.\n' });
    expect((await (await tool(turn, 'list_repository_files')).run({})).isError).toBeUndefined();
  });

  it('answer the model with CONNECTOR_NOT_CONNECTED’s message once the workspace disconnects or GitHub refuses the token', async () => {
    const { user, token, turn } = await turnWith({ type: 'github', repo: 'octo-org/widgets' });
    await fetch(`${inject('fixtureOrigin')}/github/__revoke`, { method: 'POST', body: JSON.stringify({ token }) });
    expect(await (await tool(turn, 'read_repository_file')).run({ path: 'README.md' })).toMatchObject({
      isError: true,
      content: expect.stringContaining('GitHub refused the workspace’s token'),
    });
    await call('/api/v1/connectors/github/disconnect', { token: user.token, method: 'POST' });
    expect(await (await tool(turn, 'list_repository_files')).run({})).toMatchObject({
      isError: true,
      content: expect.stringContaining('GitHub is not connected in this workspace'),
    });
  });
});
