import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../workers/errors';
import { launchWorkflow } from '../../workers/services/workflow-runs';
import { BASE, call, createKey, expectError, sessionPrincipal, signUp } from '../helpers/api';
import { seedArtifact, zipOf } from '../helpers/skills';
import { sseEvents } from '../helpers/sse';
import { definition, install, launch, mapping, waitForRun } from '../helpers/workflows';
import { shardD1, shardDbFor } from '../helpers/shards';

const simple = (id = 'simple') =>
  definition(id, [mapping('echo', { name: { initData: true, path: 'name' } })], {
    description: 'Echoes the name.',
    metadata: { name: 'Simple', category: 'testing', triggers: ['manual'] },
  });

describe('install', () => {
  it('takes the three body forms and answers the stored record (201)', async () => {
    const user = await signUp();
    const forms = [{ content: JSON.stringify(simple('a-flow')) }, { definition: simple('b-flow') }, simple('c-flow')];
    for (const [i, body] of forms.entries()) {
      const res = await call(`/api/v1/workflows/slot-${i}/install`, { token: user.token, body });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.any(Number),
        slug: `slot-${i}`,
        name: 'Simple',
        description: 'Echoes the name.',
        category: 'testing',
        storagePath: `workspaces/${user.workspaceId}/workflows/slot-${i}/workflow.json`,
        installedAt: expect.any(String),
        workspaceId: user.workspaceId,
        requiresConnector: null,
        definition: JSON.stringify((forms[i] as { definition?: unknown }).definition ?? (i === 0 ? simple('a-flow') : body)),
      });
      expect(JSON.parse(res.body.definition).id).toBe(['a-flow', 'b-flow', 'c-flow'][i]);
      expect(await (await env.BUCKET.get(res.body.storagePath))!.text()).toBe(res.body.definition);
    }
    const list = await call('/api/v1/workflows', { token: user.token });
    expect(list.body.map((w: { slug: string }) => w.slug)).toEqual(['slot-0', 'slot-1', 'slot-2']);
  });

  it('overwrites an existing slug', async () => {
    const user = await signUp();
    const first = await install(user, 'flow', simple('first-id'));
    const second = await install(user, 'flow', { ...simple('second-id'), metadata: { name: 'Renamed' } });
    expect(second.id).toBe(first.id);
    expect(second.name).toBe('Renamed');
    expect((await call('/api/v1/workflows/flow', { token: user.token })).body.definition).toContain('second-id');
    expect((await call('/api/v1/workflows', { token: user.token })).body).toHaveLength(1);
  });

  it('refuses a definition that does not compile, naming the path, and writes nothing', async () => {
    const user = await signUp();
    const err = expectError(
      await call('/api/v1/workflows/bad/install', { token: user.token, body: definition('bad', [{ type: 'tool', id: 't', toolId: 'teleport' }]) }),
      400,
      'INVALID_INPUT',
    );
    expect(err.details).toMatchObject({ field: 'graph.0.toolId', rule: 'unknown_tool' });
    expect(err.message).toContain('graph.0.toolId');
    expectError(await call('/api/v1/workflows/bad/install', { token: user.token, body: { content: '{oops' } }), 400, 'INVALID_INPUT');
    expectError(await call('/api/v1/workflows/bad/install', { token: user.token, body: { unrelated: true } }), 400, 'INVALID_INPUT');
    expectError(await call('/api/v1/workflows/Bad_Slug/install', { token: user.token, body: simple() }), 400, 'INVALID_INPUT');
    // Route names are never slugs.
    expectError(await call('/api/v1/workflows/runs/install', { token: user.token, body: simple() }), 400, 'INVALID_INPUT');
    expectError(await call('/api/v1/workflows/bad', { token: user.token }), 404, 'NOT_FOUND');
  });

  it('resolves agents of this workspace through ${workspaceId}', async () => {
    const user = await signUp();
    const agentDef = definition('with-agent', [{ type: 'agent', id: 'write', agentId: '${workspaceId}:writer' }]);
    const err = expectError(await call('/api/v1/workflows/with-agent/install', { token: user.token, body: agentDef }), 400, 'INVALID_INPUT');
    expect(err.details!.field).toBe('graph.0.agentId');
    const agent = await call('/api/v1/agents', { token: user.token, body: { slug: 'writer', name: 'Writer', instructions: 'You write.' } });
    expect(agent.status).toBe(201);
    expect(agent.body).toMatchObject({ id: `${user.workspaceId}:writer`, slug: 'writer', name: 'Writer', instructions: 'You write.', model: null });
    expect((await call('/api/v1/agents', { token: user.token })).body).toEqual([agent.body]);
    await install(user, 'with-agent', agentDef);
    expectError(await call('/api/v1/agents', { token: user.token, body: { slug: 'Not A Slug', name: 'x', instructions: 'y' } }), 400, 'INVALID_INPUT');
  });

  it('installs the workflow.json of an artifact: 400, 404 and 500 per spec 7.3', async () => {
    const user = await signUp();
    const zip = await seedArtifact(user.workspaceId, zipOf({ 'flow/workflow.json': JSON.stringify(simple('from-zip')), 'flow/README.md': 'hi' }));
    const res = await call('/api/v1/workflows/install-from-artifact', { token: user.token, body: { artifactId: zip.id } });
    expect(res.status).toBe(201);
    expect(res.body.slug).toBe('from-zip');
    const plain = await seedArtifact(user.workspaceId, new TextEncoder().encode(JSON.stringify(simple('from-json'))), 'workflow.json');
    expect((await call('/api/v1/workflows/install-from-artifact', { token: user.token, body: { artifactId: plain.id } })).body.slug).toBe('from-json');

    expectError(await call('/api/v1/workflows/install-from-artifact', { token: user.token, body: {} }), 400, 'INVALID_INPUT');
    expectError(await call('/api/v1/workflows/install-from-artifact', { token: user.token, body: { artifactId: 7 } }), 400, 'INVALID_INPUT');
    expectError(await call('/api/v1/workflows/install-from-artifact', { token: user.token, body: { artifactId: 'art_999999' } }), 404, 'NOT_FOUND');
    const other = await signUp();
    expectError(await call('/api/v1/workflows/install-from-artifact', { token: other.token, body: { artifactId: zip.id } }), 404, 'NOT_FOUND');
    const noFile = await seedArtifact(user.workspaceId, zipOf({ 'README.md': 'no workflow here' }));
    expectError(await call('/api/v1/workflows/install-from-artifact', { token: user.token, body: { artifactId: noFile.id } }), 500, 'INTERNAL_ERROR');
    const invalid = await seedArtifact(user.workspaceId, zipOf({ 'workflow.json': JSON.stringify(definition('broken', [])) }));
    expectError(await call('/api/v1/workflows/install-from-artifact', { token: user.token, body: { artifactId: invalid.id } }), 500, 'INTERNAL_ERROR');
  });
});

describe('list, definitions, uninstall', () => {
  it('lists definitions without graphs in the service-v1 format', async () => {
    const user = await signUp();
    await install(user, 'simple', simple());
    const res = await call('/api/v1/workflows/definitions', { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      workflows: [
        {
          id: 'simple',
          slug: 'simple',
          name: 'Simple',
          description: 'Echoes the name.',
          category: 'testing',
          inputSchema: { type: 'object' },
          outputSchema: { type: 'object' },
          triggers: ['manual'],
          requiresConnector: null,
        },
      ],
      format: 'service-v1',
      exportable: true,
      count: 1,
    });
  });

  it('uninstalls by POST and by DELETE; another workspace sees nothing', async () => {
    const user = await signUp();
    const other = await signUp();
    await install(user, 'one', simple('one'));
    await install(user, 'two', simple('two'));
    expectError(await call('/api/v1/workflows/one', { token: other.token }), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/workflows/one', { method: 'DELETE', token: other.token }), 404, 'NOT_FOUND');
    expect((await call('/api/v1/workflows', { token: other.token })).body).toEqual([]);
    expect((await call('/api/v1/workflows/one/uninstall', { method: 'POST', token: user.token })).body).toEqual({ success: true });
    expect((await call('/api/v1/workflows/two', { method: 'DELETE', token: user.token })).body).toEqual({ success: true });
    expect((await call('/api/v1/workflows', { token: user.token })).body).toEqual([]);
    expectError(await call('/api/v1/workflows/two', { method: 'DELETE', token: user.token }), 404, 'NOT_FOUND');
    const audit = await call('/api/v1/audit-logs?resource_type=workflow', { token: user.token });
    expect(audit.body.data.map((e: { action: string }) => e.action).sort()).toEqual([
      'workflow.installed',
      'workflow.installed',
      'workflow.uninstalled',
      'workflow.uninstalled',
    ]);
  });

  it('checks scopes: reading needs library:read, launching workflow:run', async () => {
    const user = await signUp();
    await install(user, 'simple', simple());
    const reader = await createKey(user, ['library:read']);
    expect((await call('/api/v1/workflows', { apiKey: reader.key })).status).toBe(200);
    const err = expectError(await call('/api/v1/workflows/simple/launch', { apiKey: reader.key, body: {} }), 403, 'FORBIDDEN');
    expect(err.details!.scope).toBe('workflow:run');
  });
});

describe('launch', () => {
  it('answers 201 {runId, workflowId, status} and resolves the slug, the namespaced id and the declared id', async () => {
    const user = await signUp();
    await install(user, 'library-slug', simple('declared-id'));
    for (const id of ['library-slug', `${user.workspaceId}:library-slug`, 'declared-id']) {
      const res = await call(`/api/v1/workflows/${encodeURIComponent(id)}/launch`, { token: user.token, body: { inputs: { name: id } } });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ runId: expect.any(String), workflowId: 'library-slug', status: 'started' });
      const { run } = await waitForRun(user, res.body.runId);
      expect(run.snapshot.result).toEqual({ name: id });
    }
    expectError(await call('/api/v1/workflows/nope/launch', { token: user.token, body: {} }), 404, 'NOT_FOUND');
  });

  it('validates inputs against inputSchema', async () => {
    const user = await signUp();
    await install(
      user,
      'typed',
      definition('typed', [mapping('m', { n: { initData: true, path: 'count' } })], {
        inputSchema: { type: 'object', required: ['count'], properties: { count: { type: 'integer', minimum: 1 } } },
      }),
    );
    const missing = expectError(await call('/api/v1/workflows/typed/launch', { token: user.token, body: {} }), 400, 'INVALID_INPUT');
    expect(missing.details!.field).toBe('inputs');
    const wrong = expectError(await call('/api/v1/workflows/typed/launch', { token: user.token, body: { inputs: { count: 0 } } }), 400, 'INVALID_INPUT');
    expect(wrong.details!.field).toBe('inputs.count');
    expectError(await call('/api/v1/workflows/typed/launch', { token: user.token, body: { inputs: [1] } }), 400, 'INVALID_INPUT');
    expect((await call('/api/v1/workflows/typed/launch', { token: user.token, body: { inputs: { count: 2 }, ignored: true } })).status).toBe(201);
  });

  it('recompiles at launch: a definition whose agent is gone fails the launch', async () => {
    const user = await signUp();
    await call('/api/v1/agents', { token: user.token, body: { slug: 'helper', name: 'Helper', instructions: 'Help.' } });
    await install(user, 'uses-agent', definition('uses-agent', [{ type: 'agent', id: 'a', agentId: '${workspaceId}:helper' }]));
    await (await shardD1(user.workspaceId)).prepare('DELETE FROM agents WHERE workspace_id = ?').bind(user.workspaceId).run();
    const err = expectError(await call('/api/v1/workflows/uses-agent/launch', { token: user.token, body: {} }), 400, 'INVALID_INPUT');
    expect(err.details!.field).toBe('graph.0.agentId');
  });

  it('answers 503 without the queue binding and creates no run', async () => {
    const user = await signUp();
    await install(user, 'simple', simple());
    const db = await shardDbFor(user.workspaceId);
    const noQueue = { ...env, WORKFLOW_STEPS: undefined } as unknown as typeof env;
    const error = await launchWorkflow(db, noQueue, sessionPrincipal(user), { workflowId: 'simple' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    expect((await call('/api/v1/workflows/runs', { token: user.token })).body).toEqual({ runs: [] });
  });
});

describe('runs', () => {
  it('lists runs newest first (limit default 50), details them, and hides them from other workspaces', async () => {
    const user = await signUp();
    await install(user, 'simple', simple());
    expect((await call('/api/v1/workflows/runs', { token: user.token })).body).toEqual({ runs: [] });
    const first = await launch(user, 'simple', { name: 'a' });
    await waitForRun(user, first);
    const second = await launch(user, 'simple', { name: 'b' });
    await waitForRun(user, second);
    const list = await call('/api/v1/workflows/runs', { token: user.token });
    expect(list.body.runs.map((r: { runId: string }) => r.runId)).toEqual([second, first]);
    expect(list.body.runs[0]).toEqual({
      runId: second,
      workflowId: 'simple',
      status: 'success',
      resourceId: user.user.id,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      snapshot: { status: 'success', context: { input: { name: 'b' }, echo: { status: 'success', output: { name: 'b' } } }, value: {}, result: { name: 'b' } },
    });
    expect((await call('/api/v1/workflows/runs?limit=1', { token: user.token })).body.runs).toHaveLength(1);
    expectError(await call('/api/v1/workflows/runs?limit=0', { token: user.token }), 400, 'INVALID_INPUT');
    const other = await signUp();
    expectError(await call(`/api/v1/workflows/runs/${first}`, { token: other.token }), 404, 'NOT_FOUND');
    expectError(await call(`/api/v1/workflows/runs/${first}/cancel`, { token: other.token, body: {} }), 404, 'NOT_FOUND');
    expect((await call(`/api/v1/workflows/runs/${first}/resume`, { token: other.token, body: {} })).status).toBe(404);
    expect((await call('/api/v1/workflows/runs', { token: other.token })).body).toEqual({ runs: [] });
  });

  it('streams workflow-snapshot frames and closes on success', async () => {
    const user = await signUp();
    await install(user, 'slow', definition('slow', [{ type: 'sleep', id: 'nap', duration: 300 }, mapping('done', { ok: { value: true } })]));
    const runId = await launch(user, 'slow');
    const res = await exports.default.fetch(`${BASE}/api/v1/workflows/runs/${runId}/events`, { headers: { 'x-auth-token': user.token } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const frames = sseEvents(await res.text());
    expect(frames.map((f) => f.type)).toEqual(frames.map(() => 'workflow-snapshot'));
    expect(frames[0]).toMatchObject({ type: 'workflow-snapshot', runId, workflowId: 'slow', status: 'running' });
    expect(frames.at(-1)).toMatchObject({
      type: 'workflow-snapshot',
      runId,
      status: 'success',
      snapshot: { result: { ok: true } },
      updatedAt: expect.any(String),
    });
    expectError(await call(`/api/v1/workflows/runs/missing-run/events`, { token: user.token }), 404, 'NOT_FOUND');
  });
});
