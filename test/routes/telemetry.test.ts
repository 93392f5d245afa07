import { env } from 'cloudflare:workers';
import { createExecutionContext, createMessageBatch, getQueueResult } from 'cloudflare:test';
import { describe, expect, inject, it } from 'vitest';
import worker from '../../workers/index';
import { consumeTelemetryExport } from '../../workers/queues/telemetry-export';
import type { TelemetryMessage } from '../../workers/services/telemetry-export';
import { call, createKey, expectError, signUp, waitForStatus, type TestUser } from '../helpers/api';
import { connectMcp, ok } from '../helpers/mcp';
import { shardD1 } from '../helpers/shards';
import { signUpWithSummarizer } from '../helpers/skills';
import { definition, install, mapping, waitForRun } from '../helpers/workflows';

let inboxes = 0;
/** A fresh inbox of the fixture server (test/setup/fixture-server.ts); `fail<n>-` answers 500 to its first n requests. */
const inboxUrl = (prefix = '') => `${inject('fixtureOrigin')}/inbox/${prefix}otel-${Date.now().toString(36)}-${inboxes++}`;

interface Received {
  headers: Record<string, string>;
  body: string;
}

async function receivedAtLeast(url: string, count: number, timeoutMs = 20_000): Promise<Received[]> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const got: Received[] = await (await fetch(`${url}/__read`)).json();
    if (got.length >= count) return got;
    if (Date.now() > until) throw new Error(`${url} received ${got.length} of ${count}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const hex = (digits: number) => Array.from(crypto.getRandomValues(new Uint8Array(digits / 2)), (b) => b.toString(16).padStart(2, '0')).join('');

const setTelemetry = (user: TestUser, body: Record<string, unknown>) =>
  call(`/api/v1/workspaces/${user.workspaceId}/telemetry`, { token: user.token, method: 'PUT', body });

type KeyValue = { key: string; value: { stringValue?: string; intValue?: string; doubleValue?: number } };
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: KeyValue[];
}

const attr = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value?.stringValue ?? (value?.intValue === undefined ? value?.doubleValue : Number(value.intValue));
};

/** Every span of `traceId` the inbox got, across its requests, once `complete` holds of them. */
async function traceReceived(url: string, traceId: string, complete: (spans: OtlpSpan[]) => boolean): Promise<OtlpSpan[]> {
  const until = Date.now() + 20_000;
  for (;;) {
    const got: Received[] = await (await fetch(`${url}/__read`)).json();
    const spans = got
      .flatMap((r) => JSON.parse(r.body).resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans as OtlpSpan[])))
      .filter((s) => s.traceId === traceId);
    if (complete(spans)) return spans;
    if (Date.now() > until) throw new Error(`${url} received ${JSON.stringify(spans.map((s) => s.name))} of trace ${traceId}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A user with a telemetry destination at a fresh inbox and an agent for workflow steps. */
async function withDestinationAndAgent() {
  const user = await signUpWithSummarizer();
  const url = inboxUrl();
  expect((await setTelemetry(user, { endpoint: url })).status).toBe(200);
  await call('/api/v1/agents', { token: user.token, body: { slug: 'writer', name: 'Writer', instructions: '# Release Writer\nYou write release notes.' } });
  return { user, url };
}

const hasRoot = (name: string) => (spans: OtlpSpan[]) => spans.some((s) => s.name === name);

describe('/api/v1/workspaces/:id/telemetry', () => {
  it('shows the endpoint and header names only, refuses what the service may not call naming the field, and is 404 to another workspace', async () => {
    const owner = await signUp();
    expect((await call(`/api/v1/workspaces/${owner.workspaceId}/telemetry`, { token: owner.token })).body).toMatchObject({ endpoint: null, headerNames: [] });
    const set = await setTelemetry(owner, { endpoint: 'https://collector.example.com/v1/traces', headers: { 'x-honeycomb-team': 'secret-team-key' } });
    expect(set.status).toBe(200);
    const shown = await call(`/api/v1/workspaces/${owner.workspaceId}/telemetry`, { token: owner.token });
    expect(shown.body).toEqual({
      endpoint: 'https://collector.example.com/v1/traces',
      headerNames: ['x-honeycomb-team'],
      exported: 0,
      dropped: 0,
      lastError: null,
      lastErrorAt: null,
    });
    expect(JSON.stringify(shown.body)).not.toContain('secret-team-key');

    const refused = async (body: Record<string, unknown>) => expectError(await setTelemetry(owner, body), 400, 'INVALID_INPUT').details;
    expect(await refused({ endpoint: 'http://collector.example.com/v1/traces' })).toMatchObject({ field: 'endpoint', rule: 'https' });
    expect(await refused({ endpoint: 'not a url' })).toMatchObject({ field: 'endpoint' });
    expect(await refused({ endpoint: 'https://collector.example.com/', headers: { 'content-type': 'text/plain' } })).toMatchObject({
      field: 'headers.content-type',
    });
    expect((await refused({ endpoint: 'https://collector.example.com/', headers: { 'bad name': 'x' } }))!.field).toMatch(/^headers/);

    const stranger = await signUp();
    expectError(await call(`/api/v1/workspaces/${owner.workspaceId}/telemetry`, { token: stranger.token }), 404, 'NOT_FOUND');
    expectError(
      await call(`/api/v1/workspaces/${owner.workspaceId}/telemetry`, { token: stranger.token, method: 'PUT', body: { endpoint: null } }),
      404,
      'NOT_FOUND',
    );

    expect((await setTelemetry(owner, { endpoint: null })).body).toMatchObject({ endpoint: null, headerNames: [] });
  });
});

describe('export', () => {
  it("exports a skill run's span tree under the caller's traceparent, with the GenAI attribute names", async () => {
    const user = await signUpWithSummarizer();
    const url = inboxUrl();
    expect((await setTelemetry(user, { endpoint: url, headers: { authorization: 'Bearer collector-key' } })).status).toBe(200);
    const [traceId, parentSpanId] = [hex(32), hex(16)];
    const run = await call('/api/v1/skills/meeting-summarizer/run', {
      token: user.token,
      body: { input: 'Notes of the weekly meeting.' },
      headers: { traceparent: `00-${traceId}-${parentSpanId}-01` },
    });
    expect(run.status).toBe(200);
    await waitForStatus(user, run.body.executionId, 'completed');

    const [request] = await receivedAtLeast(url, 1);
    expect(request!.headers['authorization']).toBe('Bearer collector-key');
    expect(request!.headers['content-type']).toBe('application/json');
    const body = JSON.parse(request!.body);
    const [resourceSpans] = body.resourceSpans;
    expect(resourceSpans.resource.attributes).toContainEqual({ key: 'service.name', value: { stringValue: 'workspace-skills-service' } });
    const spans: OtlpSpan[] = resourceSpans.scopeSpans[0].spans;

    const root = spans.find((s) => s.name === 'invoke_agent Meeting Summarizer')!;
    expect(root).toBeDefined();
    expect(root.traceId).toBe(traceId);
    expect(root.parentSpanId).toBe(parentSpanId);
    expect(attr(root, 'gen_ai.operation.name')).toBe('invoke_agent');
    expect(attr(root, 'workspace_skills.execution.id')).toBe(run.body.executionId);

    const children = spans.filter((s) => s !== root);
    for (const span of children) {
      expect(span.traceId).toBe(traceId);
      expect(span.parentSpanId).toBe(root.spanId);
      expect(BigInt(span.startTimeUnixNano) >= BigInt(root.startTimeUnixNano)).toBe(true);
      expect(BigInt(span.endTimeUnixNano) <= BigInt(root.endTimeUnixNano)).toBe(true);
    }
    expect(new Set(spans.map((s) => s.spanId)).size).toBe(spans.length);
    const model = children.filter((s) => attr(s, 'gen_ai.operation.name') === 'chat');
    const tools = children.filter((s) => attr(s, 'gen_ai.operation.name') === 'execute_tool');
    // The local model writes its artifact with a tool, then answers: two model requests around one tool call.
    expect(model).toHaveLength(2);
    expect(tools.map((s) => [s.name, attr(s, 'gen_ai.tool.name')])).toEqual([['execute_tool write_artifact', 'write_artifact']]);
    for (const span of model) {
      expect(span.name).toBe(`chat ${attr(span, 'gen_ai.request.model')}`);
      expect(attr(span, 'gen_ai.usage.input_tokens')).toBeGreaterThan(0);
      expect(attr(span, 'gen_ai.usage.output_tokens')).toBeGreaterThan(0);
      expect(attr(span, 'workspace_skills.cost')).toEqual(expect.any(Number));
    }
    const total = (key: string) => model.reduce((sum, s) => sum + Number(attr(s, key)), 0);
    expect(attr(root, 'gen_ai.usage.input_tokens')).toBe(total('gen_ai.usage.input_tokens'));
    expect(attr(root, 'gen_ai.usage.output_tokens')).toBe(total('gen_ai.usage.output_tokens'));

    for (let i = 0; ; i++) {
      const shown = await call(`/api/v1/workspaces/${user.workspaceId}/telemetry`, { token: user.token });
      if (shown.body.exported === 1) break;
      if (i > 50) throw new Error(`exported stays ${shown.body.exported}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  it('counts a trace the receiver never takes as dropped, and the run completes all the same', async () => {
    const user = await signUpWithSummarizer();
    const url = inboxUrl('fail99-');
    expect((await setTelemetry(user, { endpoint: url })).status).toBe(200);
    const run = await call('/api/v1/skills/meeting-summarizer/run', { token: user.token, body: { input: 'Notes.' } });
    expect(run.status).toBe(200);
    await waitForStatus(user, run.body.executionId, 'completed');

    const executionId = Number(String(run.body.executionId).replace('exec_', ''));
    const row = await (await shardD1(user.workspaceId)).prepare('SELECT turn_key FROM executions WHERE id = ?').bind(executionId).first<{ turn_key: string }>();
    const message: TelemetryMessage = {
      kind: 'execution',
      workspaceId: user.workspaceId,
      shard: user.shard,
      executionId,
      turnKey: row!.turn_key,
      model: 'local',
      ownKey: false,
      traceparent: null,
    };
    // The queue's last attempt of the export: it fails too, and the trace is dropped rather than tried again.
    const batch = createMessageBatch('telemetry-export', [{ id: `m-${Math.random()}`, timestamp: new Date(), attempts: 3, body: message }]);
    await consumeTelemetryExport(batch, env);
    const result = await getQueueResult(batch, createExecutionContext());
    expect(result.explicitAcks).toHaveLength(1);
    expect(result.retryMessages).toEqual([]);

    const shown = await call(`/api/v1/workspaces/${user.workspaceId}/telemetry`, { token: user.token });
    expect(shown.body).toMatchObject({ endpoint: url, exported: 0, dropped: 1, lastError: 'HTTP 500', lastErrorAt: expect.any(String) });
    expect((await call(`/api/v1/executions/${run.body.executionId}/status`, { token: user.token })).body.status).toBe('completed');
  });

  it('counts as dropped a trace whose export could not be made on its last attempt, and retries it before', async () => {
    const user = await signUp();
    const url = inboxUrl();
    expect((await setTelemetry(user, { endpoint: url })).status).toBe(200);
    const message: TelemetryMessage = { kind: 'workflow_run', workspaceId: user.workspaceId, shard: user.shard, runId: `run_${hex(16)}`, traceparent: null };
    // The run's object cannot be reached, so its spans cannot be built.
    const unreachable = {
      getByName: () => ({ traceSource: async () => Promise.reject(new Error('object unreachable')) }),
    } as unknown as typeof env.WORKFLOW_RUN;
    const consume = async (attempts: number) => {
      const batch = createMessageBatch('telemetry-export', [{ id: `m-${Math.random()}`, timestamp: new Date(), attempts, body: message }]);
      await consumeTelemetryExport(batch, { ...env, WORKFLOW_RUN: unreachable });
      return getQueueResult(batch, createExecutionContext());
    };
    const first = await consume(1);
    expect(first.retryMessages).toHaveLength(1);
    expect((await call(`/api/v1/workspaces/${user.workspaceId}/telemetry`, { token: user.token })).body).toMatchObject({ dropped: 0 });
    const last = await consume(3);
    expect(last.explicitAcks).toHaveLength(1);
    expect(last.retryMessages).toEqual([]);
    const shown = await call(`/api/v1/workspaces/${user.workspaceId}/telemetry`, { token: user.token });
    expect(shown.body).toMatchObject({ exported: 0, dropped: 1, lastError: 'the export could not be prepared', lastErrorAt: expect.any(String) });
  });

  it('counts as dropped the traces the queue dead-letters (their consumer cut off on every attempt)', async () => {
    const user = await signUp();
    expect((await setTelemetry(user, { endpoint: inboxUrl() })).status).toBe(200);
    const message = (runId: string): TelemetryMessage => ({ kind: 'workflow_run', workspaceId: user.workspaceId, shard: user.shard, runId, traceparent: null });
    const batch = createMessageBatch(
      'telemetry-export-dlq',
      ['run_a', 'run_b'].map((runId) => ({ id: `m-${Math.random()}`, timestamp: new Date(), attempts: 1, body: message(`${runId}_${hex(8)}`) })),
    );
    await worker.queue(batch, env);
    expect((await getQueueResult(batch, createExecutionContext())).explicitAcks).toHaveLength(2);
    const shown = await call(`/api/v1/workspaces/${user.workspaceId}/telemetry`, { token: user.token });
    expect(shown.body).toMatchObject({ exported: 0, dropped: 2, lastError: 'the export could not be prepared' });
  });
});

describe('workflow runs', () => {
  it("export the run, a span per step and the agent step's skill run under its step, in the launch request's trace", async () => {
    const { user, url } = await withDestinationAndAgent();
    await install(
      user,
      'notes-flow',
      definition('notes-flow', [
        mapping('brief', { topic: { value: 'The new search' } }),
        { type: 'agent', id: 'write', agentId: '${workspaceId}:writer' },
        {
          type: 'parallel',
          id: 'both',
          steps: [
            { type: 'sleep', id: 'a', duration: 1 },
            { type: 'sleep', id: 'b', duration: 1 },
          ],
        },
      ]),
    );
    const [traceId, parentSpanId] = [hex(32), hex(16)];
    const launched = await call('/api/v1/workflows/notes-flow/launch', {
      token: user.token,
      body: {},
      headers: { traceparent: `00-${traceId}-${parentSpanId}-01` },
    });
    expect(launched.status).toBe(201);
    expect((await waitForRun(user, launched.body.runId)).run.status).toBe('success');

    const spans = await traceReceived(url, traceId, (got) => hasRoot('invoke_workflow notes-flow')(got) && hasRoot('invoke_agent Writer')(got));
    const byName = (name: string) => spans.find((s) => s.name === name)!;
    const root = byName('invoke_workflow notes-flow');
    expect(root.parentSpanId).toBe(parentSpanId);
    expect(attr(root, 'gen_ai.operation.name')).toBe('invoke_workflow');
    expect(attr(root, 'gen_ai.workflow.name')).toBe('notes-flow');
    expect(attr(root, 'workspace_skills.workflow_run.id')).toBe(launched.body.runId);
    expect(attr(root, 'workspace_skills.workflow_run.status')).toBe('success');

    const steps = ['brief', 'write', 'both', 'a', 'b'].map((id) => byName(`step ${id}`));
    const [brief, write, both, a, b] = steps;
    for (const step of [brief!, write!, both!]) expect(step.parentSpanId).toBe(root.spanId);
    for (const step of [a!, b!]) expect(step.parentSpanId).toBe(both!.spanId);
    expect(steps.map((s) => [attr(s, 'workspace_skills.workflow.step.type'), attr(s, 'workspace_skills.workflow.step.status')])).toEqual([
      ['mapping', 'success'],
      ['agent', 'success'],
      ['parallel', 'success'],
      ['sleep', 'success'],
      ['sleep', 'success'],
    ]);
    for (const span of steps) {
      expect(BigInt(span.startTimeUnixNano) >= BigInt(root.startTimeUnixNano)).toBe(true);
      expect(BigInt(span.endTimeUnixNano) <= BigInt(root.endTimeUnixNano)).toBe(true);
    }

    // The agent step's execution is a skill run whose spans hang under the step.
    const agent = byName('invoke_agent Writer');
    expect(agent.parentSpanId).toBe(write!.spanId);
    expect(attr(agent, 'workspace_skills.execution.id')).toBe(attr(write!, 'workspace_skills.execution.id'));
    expect(spans.filter((s) => s.parentSpanId === agent.spanId).map((s) => attr(s, 'gen_ai.operation.name'))).toContain('chat');
    expect(new Set(spans.map((s) => s.spanId)).size).toBe(spans.length);
  });

  it("take an MCP call's _meta.traceparent as the parent of a skill run's trace and of a workflow run's", async () => {
    const { user, url } = await withDestinationAndAgent();
    await install(user, 'mcp-flow', definition('mcp-flow', [{ type: 'agent', id: 'write', agentId: '${workspaceId}:writer' }]));
    const client = await connectMcp({ 'x-api-key': (await createKey(user, ['*'])).key });

    const skill = { traceId: hex(32), spanId: hex(16) };
    const started = ok(
      await client.callTool({
        name: 'execute-skill',
        arguments: { slug: 'meeting-summarizer', input: 'Notes of the weekly meeting.' },
        _meta: { traceparent: `00-${skill.traceId}-${skill.spanId}-01` },
      }),
    );
    await waitForStatus(user, started.executionId, 'completed');
    const flow = { traceId: hex(32), spanId: hex(16) };
    const launched = ok(
      await client.callTool({ name: 'start-workflow', arguments: { workflowId: 'mcp-flow' }, _meta: { traceparent: `00-${flow.traceId}-${flow.spanId}-01` } }),
    );
    expect((await waitForRun(user, launched.runId)).run.status).toBe('success');

    const skillSpans = await traceReceived(url, skill.traceId, hasRoot('invoke_agent Meeting Summarizer'));
    const skillRoot = skillSpans.find((s) => s.name === 'invoke_agent Meeting Summarizer')!;
    expect(skillRoot.parentSpanId).toBe(skill.spanId);
    expect(attr(skillRoot, 'workspace_skills.execution.id')).toBe(started.executionId);

    const flowSpans = await traceReceived(url, flow.traceId, (got) => hasRoot('invoke_workflow mcp-flow')(got) && hasRoot('invoke_agent Writer')(got));
    const flowRoot = flowSpans.find((s) => s.name === 'invoke_workflow mcp-flow')!;
    expect(flowRoot.parentSpanId).toBe(flow.spanId);
    const step = flowSpans.find((s) => s.name === 'step write')!;
    expect(step.parentSpanId).toBe(flowRoot.spanId);
    expect(flowSpans.find((s) => s.name === 'invoke_agent Writer')!.parentSpanId).toBe(step.spanId);
  });
});
