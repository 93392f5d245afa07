import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type RunningService, until } from './helpers';
import { startPrepared } from './prepared';

/** Generous: two cores shared with other work can make a start slow. */
const READY_MS = 150_000;
/** A receiver on loopback needs LOCAL_DEVELOPMENT (docs/telemetry.md). */
const ARGS = ['--var', 'LOCAL_DEVELOPMENT:true'];

/** The official OTLP definitions (opentelemetry-proto), vendored in test/fixtures/otlp. */
function otlpRequestType(): protobuf.Type {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(process.cwd(), 'test/fixtures/otlp', target);
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
  root.resolveAll();
  return root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
}

/** OTLP/JSON writes these bytes fields in hex, every other one in base64. */
const HEX_IDS = new Set(['traceId', 'spanId', 'parentSpanId']);

/**
 * An OTLP/JSON value as protobufjs takes it, by the OTLP JSON mapping: every key a field of the
 * type in lowerCamelCase, ids in hex, enums as integers, 64-bit integers as decimal strings or numbers.
 */
function messageLike(type: protobuf.Type, json: unknown, path: string): Record<string, unknown> {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new Error(`${path}: not an object`);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(json)) {
    const field = type.fields[key];
    if (!field) throw new Error(`${path}.${key}: not a field of ${type.fullName}`);
    if (!field.repeated) out[key] = fieldValue(field, value, `${path}.${key}`);
    else if (Array.isArray(value)) out[key] = value.map((v, i) => fieldValue(field, v, `${path}.${key}[${i}]`));
    else throw new Error(`${path}.${key}: not an array`);
  }
  return out;
}

function fieldValue(field: protobuf.Field, value: unknown, path: string): unknown {
  const { resolvedType } = field;
  if (resolvedType instanceof protobuf.Type) return messageLike(resolvedType, value, path);
  if (resolvedType instanceof protobuf.Enum) {
    if (!Object.values(resolvedType.values).includes(value as number))
      throw new Error(`${path}: ${JSON.stringify(value)} is not a ${resolvedType.name} number`);
    return value;
  }
  if (field.type === 'bytes') {
    if (!HEX_IDS.has(field.name)) return Buffer.from(String(value), 'base64');
    if (typeof value !== 'string' || !/^([0-9a-f]{2})*$/.test(value)) throw new Error(`${path}: not lowercase hex`);
    return Buffer.from(value, 'hex');
  }
  if (/64$/.test(field.type) && !(typeof value === 'string' ? /^-?\d+$/.test(value) : Number.isInteger(value)))
    throw new Error(`${path}: not a 64-bit integer`);
  return value;
}

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
}

/** The spans of an OTLP/JSON export body, decoded with the official definitions (throws on anything they do not allow). */
function decodeExport(type: protobuf.Type, body: string): { resource: Record<string, unknown>; spans: ReceivedSpan[] }[] {
  const message = type.fromObject(messageLike(type, JSON.parse(body), 'ExportTraceServiceRequest'));
  expect(type.verify(message)).toBeNull();
  const decoded = type.toObject(type.decode(type.encode(message).finish()), { longs: String, enums: Number, bytes: String, defaults: true }) as any;
  const hex = (base64: string) => Buffer.from(base64, 'base64').toString('hex');
  const attributes = (list: { key: string; value: Record<string, unknown> }[]) =>
    Object.fromEntries(list.map(({ key, value }) => [key, value.stringValue ?? value.intValue ?? value.doubleValue ?? value.boolValue]));
  return decoded.resourceSpans.map((rs: any) => ({
    resource: attributes(rs.resource.attributes),
    spans: rs.scopeSpans.flatMap((ss: any) =>
      ss.spans.map((s: any) => {
        expect([hex(s.traceId).length, hex(s.spanId).length]).toEqual([32, 16]);
        return { traceId: hex(s.traceId), spanId: hex(s.spanId), parentSpanId: hex(s.parentSpanId), name: s.name, attributes: attributes(s.attributes) };
      }),
    ),
  }));
}

const hexOf = (bytes: number) => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString('hex');

describe('OpenTelemetry export against wrangler dev', () => {
  let service: RunningService;
  const bodies: { path: string; contentType: string; body: string }[] = [];
  /** A local OTLP/HTTP receiver, as a collector's: it takes every POST with 200. */
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    bodies.push({ path: req.url ?? '/', contentType: req.headers['content-type'] ?? '', body: Buffer.concat(chunks).toString('utf8') });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  let endpoint = '';
  beforeAll(async () => {
    const port = await freePort();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${port}/v1/traces`;
    service = await startPrepared(READY_MS, { args: ARGS });
  });
  afterAll(async () => {
    await service?.stop();
    await new Promise((resolve) => server.close(resolve));
  });

  const api = async (path: string, body?: unknown, method = body === undefined ? 'GET' : 'POST', headers: Record<string, string> = {}) => {
    const res = await fetch(`${service.base}${path}`, {
      method,
      headers: { 'x-api-key': service.apiKey, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  it("exports the span trees of a skill run and of a workflow run, each under the caller's traceparent, as the official OTLP definitions parse them", async () => {
    const type = otlpRequestType();
    const workspace = (await api('/api/v1/workspaces/current')).body.id as string;
    expect((await api(`/api/v1/workspaces/${workspace}/telemetry`, { endpoint }, 'PUT')).status).toBe(200);
    const skill = { name: 'E2E Otel', description: 'Summarises.', category: 'productivity', prompt: '# E2E Otel\nSummarise.' };
    expect((await api('/api/v1/skills/e2e-otel', skill, 'PUT')).status).toBeLessThan(300);
    expect((await api('/api/v1/agents', { slug: 'e2e-writer', name: 'E2E Writer', instructions: '# Writer\nYou write notes.' })).status).toBe(201);
    const graph = [
      { type: 'mapping', id: 'brief', mapConfig: JSON.stringify({ topic: { value: 'The release' } }) },
      { type: 'agent', id: 'write', agentId: `${workspace}:e2e-writer` },
    ];
    const flow = { id: 'e2e-otel-flow', inputSchema: { type: 'object' }, outputSchema: { type: 'object' }, graph };
    expect((await api('/api/v1/workflows/e2e-otel-flow/install', flow)).status).toBe(201);

    const callers = { skill: { traceId: hexOf(16), spanId: hexOf(8) }, flow: { traceId: hexOf(16), spanId: hexOf(8) } };
    const traceparent = (c: { traceId: string; spanId: string }) => ({ traceparent: `00-${c.traceId}-${c.spanId}-01` });
    const run = await api('/api/v1/skills/e2e-otel/run', { input: 'Ship it.' }, 'POST', traceparent(callers.skill));
    expect(run.status).toBe(200);
    const launched = await api('/api/v1/workflows/e2e-otel-flow/launch', {}, 'POST', traceparent(callers.flow));
    expect(launched.status).toBe(201);

    const received = () => bodies.flatMap((b) => decodeExport(type, b.body));
    const traceOf = (traceId: string) => received().flatMap((r) => r.spans.filter((s) => s.traceId === traceId));
    const named = (spans: ReceivedSpan[], name: string) => spans.find((s) => s.name === name);
    const skillSpans = await until('the skill run trace', () =>
      named(traceOf(callers.skill.traceId), 'invoke_agent E2E Otel') ? traceOf(callers.skill.traceId) : undefined,
    );
    const flowSpans = await until('the workflow run trace', () => {
      const spans = traceOf(callers.flow.traceId);
      return named(spans, 'invoke_workflow e2e-otel-flow') && named(spans, 'invoke_agent E2E Writer') ? spans : undefined;
    });
    expect(new Set(bodies.map((b) => [b.path, b.contentType].join(' ')))).toEqual(new Set(['/v1/traces application/json']));
    expect(received()[0]!.resource).toMatchObject({ 'service.name': 'workspace-skills-service', 'workspace_skills.workspace.id': workspace });

    // The skill run: its span under the caller's, its model requests and tool call under it.
    const skillRoot = named(skillSpans, 'invoke_agent E2E Otel')!;
    expect(skillRoot.parentSpanId).toBe(callers.skill.spanId);
    expect(skillRoot.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'workspace_skills.execution.id': run.body.executionId });
    const underSkill = skillSpans.filter((s) => s !== skillRoot);
    expect(underSkill.every((s) => s.parentSpanId === skillRoot.spanId)).toBe(true);
    expect(underSkill.map((s) => s.attributes['gen_ai.operation.name'])).toContain('chat');

    // The workflow run: its span under the caller's, a span per step, the agent step's skill run under its step.
    const flowRoot = named(flowSpans, 'invoke_workflow e2e-otel-flow')!;
    expect(flowRoot.parentSpanId).toBe(callers.flow.spanId);
    expect(flowRoot.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_workflow',
      'gen_ai.workflow.name': 'e2e-otel-flow',
      'workspace_skills.workflow_run.id': launched.body.runId,
      'workspace_skills.workflow_run.status': 'success',
    });
    const [brief, write] = [named(flowSpans, 'step brief')!, named(flowSpans, 'step write')!];
    expect([brief.parentSpanId, write.parentSpanId]).toEqual([flowRoot.spanId, flowRoot.spanId]);
    const agent = named(flowSpans, 'invoke_agent E2E Writer')!;
    expect(agent.parentSpanId).toBe(write.spanId);
    expect(agent.attributes['workspace_skills.execution.id']).toBe(write.attributes['workspace_skills.execution.id']);
    expect(flowSpans.filter((s) => s.parentSpanId === agent.spanId).map((s) => s.attributes['gen_ai.operation.name'])).toContain('chat');

    // Three traces: the skill run, the workflow run and the agent step's skill run.
    const shown = await until('the exports counted', async () => {
      const destination = (await api(`/api/v1/workspaces/${workspace}/telemetry`)).body;
      return destination.exported === 3 ? destination : undefined;
    });
    expect(shown).toMatchObject({ endpoint, dropped: 0, lastError: null });
  });
});
