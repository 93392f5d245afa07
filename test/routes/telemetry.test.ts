import { env } from 'cloudflare:workers';
import { createExecutionContext, createMessageBatch, getQueueResult } from 'cloudflare:test';
import { describe, expect, inject, it } from 'vitest';
import { consumeTelemetryExport } from '../../workers/queues/telemetry-export';
import type { TelemetryMessage } from '../../workers/services/telemetry-export';
import { call, expectError, signUp, waitForStatus, type TestUser } from '../helpers/api';
import { shardD1 } from '../helpers/shards';
import { signUpWithSummarizer } from '../helpers/skills';

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
});
