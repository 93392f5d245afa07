import { env, exports } from 'cloudflare:workers';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ROUTE_ACCESS, type RouteKey } from '../../workers/auth/route-scopes';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { boundShards, globalDbOf, shardBinding } from '../../workers/lib/db';
import { API_RATE_WINDOW_MS } from '../../workers/middleware/authenticate';
import { MCP_TOOLS } from '../../workers/mcp/server';
import { deliverAllChanges } from '../../workers/services/audit';
import { type ApiResponse, BASE, call, type CallOptions, createKey, FLAT_ERRORS, signUp, type TestUser } from '../helpers/api';
import { connectMcp, type ToolResult, toolJson } from '../helpers/mcp';
import { authorizeCode, exchange } from '../helpers/oauth';
import { shardD1, shardNumberOf } from '../helpers/shards';
import { definition, install, launch } from '../helpers/workflows';

/**
 * The tenant isolation matrix. Workspace A holds one of every resource; the
 * owner of workspace B (on A's shard database), and A acting in a second workspace (on another
 * shard), each with a session and with an API key holding the route's scope, name A's
 * ids on every route that takes one. Every answer must be the 404 a missing id gets (spec 7.2,
 * docs/api-conventions.md: another workspace's id is 404, never 403), carry nothing of A's, and change
 * nothing of A's. The cases are generated from ROUTE_ACCESS and MCP_TOOLS: a new route or tool
 * with an id fails here until it has a fixture or a reasoned exclusion.
 */

/** Recognisable text in A's resources: no answer to B may carry any of it. */
const MARK = {
  prompt: 'alpha-prompt-7f3e9c',
  input: 'alpha-input-2b8d41',
  secret: 'alpha-secret-value-5c1a77',
  turn: 'alpha-turn-9e4f02',
  message: 'alpha-message-3d6b18',
  agent: 'alpha-agent-8a2c55',
  invitee: 'alpha-invitee@example.test',
  memory: 'alpha-memory-6e0b93',
  githubToken: `ghp_fixture_a1f${crypto.randomUUID().replace(/-/g, '').slice(0, 9)}`,
};

/** The idempotency-key A's secret was created with: keys are per workspace. */
const IDEMPOTENCY_KEY = 'alpha-idempotency-4b7e';

/** A's resources, by the name the cases use. */
interface Fixture {
  workspaceId: string;
  workspaceSlug: string;
  /** The one-time token of A's invitation, addressed to someone other than B. */
  invitationToken: string;
  skillSlug: string;
  versionNumber: string;
  evalId: string;
  secretId: string;
  bindingId: string;
  executionId: string;
  idleExecutionId: string;
  artifactId: string;
  traceId: string;
  traceKey: string;
  threadId: string;
  keyId: string;
  keyScope: string;
  consentId: string;
  requestId: string;
  /** The link codes the app shows for the consent and the permission request. */
  consentLinkCode: string;
  requestLinkCode: string;
  workflowSlug: string;
  runId: string;
  workspaceName: string;
  webhookId: string;
  scheduleId: string;
  exportId: string;
  triggerId: string;
  /** The grant of an app A let in through the consent page. */
  grantId: string;
}

interface Probe {
  /** A's values for the route's path parameters. */
  params: Record<string, string>;
  /** A valid body, so that input validation cannot answer first. */
  body?: unknown;
}

/** Every route with a path parameter, keyed as in ROUTE_ACCESS: how to name A's resource on it. */
const CASES: Record<string, (a: Fixture) => Probe> = {
  'GET /api/v1/workspaces/:id/members': (a) => ({ params: { id: a.workspaceId } }),
  'GET /api/v1/workspaces/:id/invitations': (a) => ({ params: { id: a.workspaceId } }),
  'POST /api/v1/workspaces/:id/invitations': (a) => ({ params: { id: a.workspaceId }, body: { email: 'mallory@example.test', role: 'admin' } }),
  'GET /api/v1/workspaces/:id/retention': (a) => ({ params: { id: a.workspaceId } }),
  'PUT /api/v1/workspaces/:id/retention': (a) => ({ params: { id: a.workspaceId }, body: { traces: 1 } }),
  'GET /api/v1/workspaces/:id/limits': (a) => ({ params: { id: a.workspaceId } }),
  'PUT /api/v1/workspaces/:id/limits': (a) => ({ params: { id: a.workspaceId }, body: { monthly: 1 } }),
  'GET /api/v1/workspaces/:id/skill-guard': (a) => ({ params: { id: a.workspaceId } }),
  'PUT /api/v1/workspaces/:id/skill-guard': (a) => ({ params: { id: a.workspaceId }, body: { enabled: true } }),
  'GET /api/v1/workspaces/:id/telemetry': (a) => ({ params: { id: a.workspaceId } }),
  'PUT /api/v1/workspaces/:id/telemetry': (a) => ({ params: { id: a.workspaceId }, body: { endpoint: null } }),
  'DELETE /api/v1/workspaces/:id': (a) => ({ params: { id: a.workspaceId }, body: { confirm: a.workspaceName } }),
  'POST /api/v1/workspaces/:id/export': (a) => ({ params: { id: a.workspaceId }, body: {} }),
  'GET /api/v1/workspaces/:id/export/:exportId': (a) => ({ params: { id: a.workspaceId, exportId: a.exportId } }),

  'GET /api/v1/webhooks/:id': (a) => ({ params: { id: a.webhookId } }),
  'PATCH /api/v1/webhooks/:id': (a) => ({ params: { id: a.webhookId }, body: { enabled: false } }),
  'DELETE /api/v1/webhooks/:id': (a) => ({ params: { id: a.webhookId } }),
  'GET /api/v1/webhooks/:id/deliveries': (a) => ({ params: { id: a.webhookId } }),
  // A's endpoint has delivered nothing: the endpoint's id is what names A's resource here.
  'POST /api/v1/webhooks/:id/deliveries/:deliveryId/redeliver': (a) => ({ params: { id: a.webhookId, deliveryId: 'dlv_1' }, body: {} }),
  'POST /api/v1/webhooks/:id/rotate-secret': (a) => ({ params: { id: a.webhookId }, body: {} }),
  'POST /api/v1/api-keys/:id/revoke': (a) => ({ params: { id: a.keyId }, body: {} }),
  'GET /api/v1/agents/connect/poll/:consentId': (a) => ({ params: { consentId: a.consentId } }),
  'POST /api/v1/agents/consents/:consentId/approve': (a) => ({ params: { consentId: a.consentId }, body: {} }),
  'POST /api/v1/agents/consents/:consentId/deny': (a) => ({ params: { consentId: a.consentId }, body: {} }),
  'GET /api/v1/agents/request-permission/poll/:requestId': (a) => ({ params: { requestId: a.requestId } }),
  'POST /api/v1/agents/permission-requests/:requestId/approve': (a) => ({ params: { requestId: a.requestId }, body: {} }),
  'POST /api/v1/agents/permission-requests/:requestId/deny': (a) => ({ params: { requestId: a.requestId }, body: {} }),
  'DELETE /api/v1/agents/:keyId/scopes/:scope': (a) => ({ params: { keyId: a.keyId, scope: a.keyScope } }),

  // Installs from the marketplace by slug; A's artifact in the body is the workspace resource.
  'POST /api/v1/skills/:slug/install': (a) => ({ params: { slug: 'bravo-import' }, body: { artifactId: a.artifactId } }),
  'POST /api/v1/skills/:slug/uninstall': (a) => ({ params: { slug: a.skillSlug }, body: {} }),
  'GET /api/v1/skills/:slug/versions': (a) => ({ params: { slug: a.skillSlug } }),
  'POST /api/v1/skills/:slug/versions/:versionNumber/restore': (a) => ({ params: { slug: a.skillSlug, versionNumber: a.versionNumber }, body: {} }),
  'POST /api/v1/skills/:slug/versions/:versionNumber/promote': (a) => ({ params: { slug: a.skillSlug, versionNumber: a.versionNumber }, body: {} }),
  'GET /api/v1/skills/:slug/secrets': (a) => ({ params: { slug: a.skillSlug } }),
  'POST /api/v1/skills/:slug/secrets': (a) => ({ params: { slug: a.skillSlug }, body: { secretId: a.secretId, envVar: 'STOLEN' } }),
  'DELETE /api/v1/skills/:slug/secrets/:id': (a) => ({ params: { slug: a.skillSlug, id: a.bindingId } }),
  'POST /api/v1/skills/:slug/run': (a) => ({ params: { slug: a.skillSlug }, body: { input: 'Summarise.' } }),
  'GET /api/v1/skills/:slug': (a) => ({ params: { slug: a.skillSlug } }),
  'POST /api/v1/skills/:slug/evals/run': (a) => ({ params: { slug: a.skillSlug }, body: { budget: 0.01 } }),
  'GET /api/v1/skills/:slug/evals': (a) => ({ params: { slug: a.skillSlug } }),
  'GET /api/v1/skills/:slug/evals/:evalId': (a) => ({ params: { slug: a.skillSlug, evalId: a.evalId } }),

  'PATCH /api/v1/secrets/:id': (a) => ({ params: { id: a.secretId }, body: { value: 'overwritten' } }),
  'DELETE /api/v1/secrets/:id': (a) => ({ params: { id: a.secretId } }),

  'POST /api/v1/executions/:id/rerun': (a) => ({ params: { id: a.executionId }, body: { input: 'Again.' } }),
  'POST /api/v1/executions/:id/remix': (a) => ({ params: { id: a.executionId }, body: { input: 'Differently.' } }),
  // The idle execution: a cancel or a message would change it.
  'POST /api/v1/executions/:id/cancel': (a) => ({ params: { id: a.idleExecutionId }, body: {} }),
  'POST /api/v1/executions/:id/events': (a) => ({
    params: { id: a.idleExecutionId },
    body: { events: [{ type: 'user.message', content: [{ type: 'text', text: 'Go.' }] }] },
  }),
  'GET /api/v1/executions/:id': (a) => ({ params: { id: a.executionId } }),
  'GET /api/v1/executions/:id/status': (a) => ({ params: { id: a.executionId } }),
  'GET /api/v1/executions/:id/stream-token': (a) => ({ params: { id: a.executionId } }),

  'GET /api/v1/artifacts/:id': (a) => ({ params: { id: a.artifactId } }),
  'GET /api/v1/artifacts/:id/download': (a) => ({ params: { id: a.artifactId } }),
  'DELETE /api/v1/artifacts/:id': (a) => ({ params: { id: a.artifactId } }),

  // The suspended run: resume, cancel and dequeue would all move it.
  'GET /api/v1/workflows/runs/:runId': (a) => ({ params: { runId: a.runId } }),
  'GET /api/v1/workflows/runs/:runId/events': (a) => ({ params: { runId: a.runId } }),
  'POST /api/v1/workflows/runs/:runId/resume': (a) => ({ params: { runId: a.runId }, body: { resumeData: { ok: true } } }),
  'POST /api/v1/workflows/runs/:runId/cancel': (a) => ({ params: { runId: a.runId }, body: {} }),
  'DELETE /api/v1/workflows/queue/:runId': (a) => ({ params: { runId: a.runId } }),
  'POST /api/v1/workflows/runs/:runId/rerun': (a) => ({ params: { runId: a.runId }, body: { fromStep: 'approve' } }),
  'GET /api/v1/workflows/:slug/schedules': (a) => ({ params: { slug: a.workflowSlug } }),
  'POST /api/v1/workflows/:slug/schedules': (a) => ({ params: { slug: a.workflowSlug }, body: { cron: '0 0 1 1 *', timezone: 'UTC', input: {} } }),
  'GET /api/v1/workflows/:slug/schedules/:scheduleId': (a) => ({ params: { slug: a.workflowSlug, scheduleId: a.scheduleId } }),
  'PATCH /api/v1/workflows/:slug/schedules/:scheduleId': (a) => ({ params: { slug: a.workflowSlug, scheduleId: a.scheduleId }, body: { cron: '0 0 2 1 *' } }),
  'DELETE /api/v1/workflows/:slug/schedules/:scheduleId': (a) => ({ params: { slug: a.workflowSlug, scheduleId: a.scheduleId } }),
  'POST /api/v1/workflows/:slug/schedules/:scheduleId/pause': (a) => ({ params: { slug: a.workflowSlug, scheduleId: a.scheduleId }, body: {} }),
  'POST /api/v1/workflows/:slug/schedules/:scheduleId/resume': (a) => ({ params: { slug: a.workflowSlug, scheduleId: a.scheduleId }, body: {} }),
  'GET /api/v1/workflows/:slug/triggers': (a) => ({ params: { slug: a.workflowSlug } }),
  'POST /api/v1/workflows/:slug/triggers': (a) => ({ params: { slug: a.workflowSlug }, body: {} }),
  'GET /api/v1/workflows/:slug/triggers/:triggerId': (a) => ({ params: { slug: a.workflowSlug, triggerId: a.triggerId } }),
  'GET /api/v1/workflows/:slug/triggers/:triggerId/deliveries': (a) => ({ params: { slug: a.workflowSlug, triggerId: a.triggerId } }),
  'DELETE /api/v1/workflows/:slug/triggers/:triggerId': (a) => ({ params: { slug: a.workflowSlug, triggerId: a.triggerId } }),
  'POST /api/v1/workflows/:slug/triggers/:triggerId/rotate-secret': (a) => ({ params: { slug: a.workflowSlug, triggerId: a.triggerId }, body: {} }),
  'GET /api/v1/workflows/:slug': (a) => ({ params: { slug: a.workflowSlug } }),
  'POST /api/v1/workflows/:slug/uninstall': (a) => ({ params: { slug: a.workflowSlug }, body: {} }),
  'DELETE /api/v1/workflows/:slug': (a) => ({ params: { slug: a.workflowSlug } }),
  // The runtime id `<workspace>:<slug>`: A's fully qualified name for the workflow.
  'POST /api/v1/workflows/:id/launch': (a) => ({ params: { id: `${a.workspaceId}:${a.workflowSlug}` }, body: {} }),
  'POST /api/v1/workflows/:id/stream': (a) => ({ params: { id: a.workflowSlug }, body: { inputData: {} } }),

  'GET /api/v1/traces/:id': (a) => ({ params: { id: a.traceId } }),
  'GET /api/v1/traces/:id/events': (a) => ({ params: { id: a.traceId } }),
  'POST /api/v1/traces/:id/events': (a) => ({ params: { id: a.traceId }, body: { events: [{ type: 'agent.text', payload: { text: 'injected' } }] } }),
  'POST /api/v1/traces/:id/continue': (a) => ({ params: { id: a.traceId }, body: {} }),

  'POST /api/v1/threads/:id/messages': (a) => ({ params: { id: a.threadId }, body: { content: 'Hello?' } }),
  'GET /api/v1/threads/:id/messages': (a) => ({ params: { id: a.threadId } }),
};

/** The route's path with `params` filled in; every parameter must have a value. */
function pathOf(key: string, params: Record<string, string>) {
  const pattern = key.split(' ')[1]!;
  return pattern.replace(/:(\w+)/g, (_, name: string) => {
    if (params[name] === undefined) throw new Error(`${key}: no value for :${name}`);
    return params[name];
  });
}

/** Routes with a path parameter that names no resource of a workspace. */
const EXCLUDED: Record<string, string> = {
  'GET /api/v1/marketplace/skills/:slug': 'the public catalog: the same for every caller, no workspace owns it',
  'GET /api/v1/marketplace/skills/:slug/bundle': 'the public catalog: the same for every caller, no workspace owns it',
  'GET /api/v1/billing/return/:outcome': 'a public page after Checkout; the parameter is success or cancel',
  'PUT /api/v1/skills/:slug': "creates or updates the caller's own skill by name: B gets its own skill (checked below)",
  'POST /api/v1/workflows/:slug/install': "installs into the caller's workspace by name: B gets its own workflow (checked below)",
  'POST /api/v1/connectors/:type/connect': "the parameter is a connector type (github); B's connection is its own (checked below)",
  'POST /api/v1/connectors/:type/disconnect': "the parameter is a connector type (github); B's connection is its own (checked below)",
  'GET /api/v1/connectors/:type/status': "the parameter is a connector type (github); B's connection is its own (checked below)",
  'GET /api/v1/workspaces/:id/deletion':
    "a deletion job is the person's who asked, not a workspace's (its workspace is gone): they read it from any workspace, anyone else gets 404 (workspace-deletion.test.ts)",
  'GET /api/v1/account-deletions/:token': 'an unguessable token handed to the person deleting their account, not a workspace resource; it needs no credential',
  'POST /api/v1/oauth-grants/:id/revoke':
    "an OAuth grant is its person's, across their workspaces (the consent picks one): they revoke it from any workspace, anyone else gets 404 (oauth-grants.test.ts)",
};

/** Sessions slide their expiry on use; these columns are stamped on every use. Everything else of A's must stay as it was. */
const VOLATILE_TABLES = new Set(['sessions']);
const VOLATILE_COLUMNS = new Set(['last_used_at', 'last_polled_at']);

/** The global database and each shard, by the name their tables are reported under. */
const databases = (): [string, D1Database][] => [
  ['global', env.DB],
  ...boundShards(env).map((n): [string, D1Database] => [`shard-${n}`, shardBinding(env, n)]),
];

/** Every row of every table of every database, as JSON strings per table. */
async function snapshotDb() {
  const snapshot: Record<string, string[]> = {};
  for (const [database, db] of databases()) {
    const { results: tables } = await db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'")
      .all<{ name: string }>();
    for (const { name } of tables) {
      if (VOLATILE_TABLES.has(name)) continue;
      const { results } = await db.prepare(`SELECT * FROM "${name}"`).all<Record<string, unknown>>();
      snapshot[`${database}:${name}`] = results.map((row) =>
        JSON.stringify(Object.fromEntries(Object.entries(row).filter(([column]) => !VOLATILE_COLUMNS.has(column)))),
      );
    }
  }
  return snapshot;
}

async function until<T>(what: string, read: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const value = await read();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${what} never happened`);
}

/** Read from D1, not the API: A's rate-limit budget is kept for the checks. */
const executionStatus = async (id: string) =>
  (
    await (
      await shardD1(A.workspaceId)
    )
      .prepare('SELECT status FROM executions WHERE id = ?')
      .bind(Number(id.slice('exec_'.length)))
      .first<{ status: string }>()
  )?.status;
const runStatus = async (runId: string) =>
  (await (await shardD1(A.workspaceId)).prepare('SELECT status FROM workflow_runs WHERE run_id = ?').bind(runId).first<{ status: string }>())?.status;

async function ok(res: ApiResponse, status: number, what: string) {
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

let A: TestUser;
let B: TestUser;
let fixture: Fixture;
/** A's own key (memory:read), which opened the consent and the permission request. */
let aKey: string;
/** B's key holding every scope the route table names: the scope check always passes. */
let bKey: string;
let before: Record<string, string[]>;
/** A's own session selecting, and A's own key bound to, a second workspace of A's. */
let aElsewhere: { session: CallOptions; key: string };
/** The GitHub login A's connector acts as. */
let githubAccount: string;

/** The shards of B's workspace and of A's second one (A's own is A.shard). */
let placement: { b: number; aElsewhere: number };

/** Who must not see A's personal workspace: B, and A acting in another workspace (a user-only filter would pass for B). */
const outsiders = () => [
  { name: 'B', session: { token: B.token } as CallOptions, key: bKey },
  { name: 'A-elsewhere', ...aElsewhere },
];

/** Everything of A's that B's answers must not carry. */
const aMarkers = () => [...Object.values(MARK), A.user.id, A.email, githubAccount];
/** The string ids of A's workspace and its resources: a row written after the setup must not name any of them (A's user id may: A acts elsewhere too). */
const aIds = () => [A.workspaceId, fixture.traceId, fixture.threadId, fixture.runId, fixture.consentId, fixture.requestId, fixture.grantId];

beforeAll(async () => {
  // One after the other: each new workspace goes to the shard with the fewest, so A's second
  // workspace lands on the other shard and B on A's (the order of placement decides it).
  A = await signUp('Alice');
  const as = { token: A.token };
  const second = await ok(
    await call('/api/v1/workspaces', { ...as, body: { name: 'Alpha two', slug: `alpha-two-${crypto.randomUUID().slice(0, 8)}` } }),
    201,
    'second workspace',
  );
  B = await signUp('Bob');
  const skillSlug = 'alpha-skill';
  await ok(
    await call(`/api/v1/skills/${skillSlug}`, {
      ...as,
      method: 'PUT',
      body: {
        name: 'Alpha',
        description: 'Summarises.',
        category: 'productivity',
        prompt: `# Alpha\n${MARK.prompt}`,
        evals: [{ id: 1, prompt: MARK.input, checks: [{ type: 'contains', value: 'Alpha' }] }],
      },
    }),
    200,
    'author skill',
  );
  const secret = await ok(
    await call('/api/v1/secrets', { ...as, headers: { 'idempotency-key': IDEMPOTENCY_KEY }, body: { name: 'ALPHA_TOKEN', value: MARK.secret } }),
    201,
    'secret',
  );
  const binding = await ok(await call(`/api/v1/skills/${skillSlug}/secrets`, { ...as, body: { secretId: secret.id, envVar: 'ALPHA_TOKEN' } }), 201, 'bind');
  const run = await ok(await call(`/api/v1/skills/${skillSlug}/run`, { ...as, body: { input: MARK.input } }), 200, 'run');
  await until('the run completing', async () => ((await executionStatus(run.executionId)) === 'completed' ? true : undefined));
  const artifacts = await ok(await call('/api/v1/artifacts', as), 200, 'artifacts');
  const traces = await ok(await call('/api/v1/traces', as), 200, 'traces');
  const trace = traces.items[0];
  await ok(await call(`/api/v1/traces/${trace.id}/events`, { ...as, body: { events: [{ type: 'agent.text', payload: { text: MARK.turn } }] } }), 201, 'append');
  const idle = await ok(await call('/api/v1/executions', { ...as, body: { skill_slug: skillSlug, input: MARK.input } }), 201, 'idle execution');
  const thread = await ok(await call('/api/v1/threads', { ...as, body: { skill_slug: skillSlug, title: 'Alpha chat' } }), 201, 'thread');
  await ok(await call(`/api/v1/threads/${thread.id}/messages`, { ...as, body: { content: MARK.message } }), 201, 'message');
  const skillEval = await ok(await call(`/api/v1/skills/${skillSlug}/evals/run`, { ...as, body: { budget: 0.01 } }), 202, 'eval');
  await until('the eval ending', async () =>
    (await call(`/api/v1/skills/${skillSlug}/evals/${skillEval.id}`, as)).body.status === 'stopped' ? true : undefined,
  );

  const key = await createKey(A, ['memory:read']);
  aKey = key.key;
  const consent = await ok(await call('/api/v1/agents/connect', { apiKey: aKey, body: { requestedScopes: ['tool:execute'] } }), 202, 'consent');
  const request = await ok(
    await call('/api/v1/agents/request-permission', { apiKey: aKey, body: { scope: 'library:read', reason: 'to read' } }),
    202,
    'request',
  );
  const invitation = await ok(
    await call(`/api/v1/workspaces/${A.workspaceId}/invitations`, { ...as, body: { email: MARK.invitee, role: 'member' } }),
    201,
    'invitation',
  );
  const workspace = await ok(await call('/api/v1/workspaces/current', as), 200, 'workspace');
  await ok(await call('/api/v1/agents', { ...as, body: { slug: 'alpha-agent', name: 'Alpha agent', instructions: MARK.agent } }), 201, 'agent');
  await ok(await call('/api/v1/memory', { ...as, method: 'PUT', body: { content: MARK.memory } }), 200, 'memory');
  // The fake GitHub names the account after the token: `octo-<what follows ghp_fixture_>`.
  const github = await ok(await call('/api/v1/connectors/github/connect', { ...as, body: { token: MARK.githubToken } }), 200, 'connect');
  githubAccount = github.account;

  const workflowSlug = 'alpha-flow';
  await install(
    A,
    workflowSlug,
    definition('alpha-flow', [{ type: 'tool', id: 'approve', toolId: 'human-input', options: { metadata: { prompt: MARK.prompt } } }]),
  );
  const runId = await launch(A, workflowSlug);
  await until('the workflow suspending', async () => ((await runStatus(runId)) === 'suspended' ? true : undefined));
  const webhook = await ok(
    await call('/api/v1/webhooks', { ...as, body: { url: 'https://hooks.example.test/alpha', events: ['execution.completed'] } }),
    201,
    'webhook',
  );
  // Next fire in January: nothing fires while the tests run.
  const schedule = await ok(
    await call(`/api/v1/workflows/${workflowSlug}/schedules`, { ...as, body: { cron: '0 0 1 1 *', timezone: 'UTC', input: {} } }),
    201,
    'schedule',
  );
  const trigger = await ok(await call(`/api/v1/workflows/${workflowSlug}/triggers`, { ...as, body: {} }), 201, 'trigger');
  const started = await ok(await call(`/api/v1/workspaces/${A.workspaceId}/export`, { ...as, body: {} }), 201, 'export');
  await until('the export being written', async () =>
    (await call(`/api/v1/workspaces/${A.workspaceId}/export/${started.id}`, as)).body.status === 'ready' ? true : undefined,
  );

  const app = await authorizeCode('profile:read offline_access', { user: A });
  expect((await exchange(app)).status).toBe(200);
  const [grant] = (await ok(await call('/api/v1/oauth-grants', as), 200, 'grants')).data;

  fixture = {
    workspaceId: A.workspaceId,
    workspaceSlug: workspace.slug,
    invitationToken: invitation.token,
    skillSlug,
    versionNumber: '1',
    evalId: skillEval.id,
    secretId: secret.id,
    bindingId: String(binding.id),
    executionId: run.executionId,
    idleExecutionId: idle.id,
    artifactId: artifacts.data[0].id,
    traceId: trace.id,
    traceKey: trace.traceKey,
    threadId: thread.id,
    keyId: key.id,
    keyScope: 'memory:read',
    consentId: consent.consent_id,
    requestId: request.request_id,
    consentLinkCode: consent.link_code,
    requestLinkCode: request.link_code,
    workflowSlug,
    runId,
    workspaceName: workspace.name,
    webhookId: webhook.id,
    scheduleId: schedule.id,
    exportId: started.id,
    triggerId: trigger.id,
    grantId: grant.id,
  };

  // B's own skill and workflow, for the references to A's ids in bodies.
  const bs = { token: B.token };
  await ok(
    await call('/api/v1/skills/bravo-skill', {
      ...bs,
      method: 'PUT',
      body: { name: 'Bravo', description: 'Writes.', category: 'productivity', prompt: '# Bravo' },
    }),
    200,
    'B skill',
  );
  await install(B, 'bravo-flow', definition('bravo-flow', [{ type: 'mapping', id: 'echo', mapConfig: JSON.stringify({ x: { value: 1 } }) }]));
  const scopes = [...new Set(Object.values(ROUTE_ACCESS).flatMap((access) => ('scope' in access ? [access.scope] : [])))];
  bKey = (await createKey(B, scopes)).key;
  const elsewhere = { token: A.token, headers: { 'x-workspace-id': second.id } };
  const elsewhereKey = await ok(await call('/api/v1/api-keys', { ...elsewhere, body: { name: 'elsewhere', scopes } }), 201, 'key elsewhere');
  aElsewhere = { session: elsewhere, key: elsewhereKey.key };
  placement = { b: B.shard, aElsewhere: await shardNumberOf(second.id) };
  for (const credential of [elsewhere, { apiKey: elsewhereKey.key }]) {
    expect((await ok(await call('/api/v1/workspaces/current', credential), 200, 'current workspace')).id).toBe(second.id);
  }
  // Background work of A's run and chat turn (settlement, trace totals) may still land: wait until two snapshots agree.
  // Recorded global changes are delivered to their shards first, as listing a workspace's audit
  // would (B lists its own): the snapshot holds them where they stay.
  let previous = '';
  before = await until('the database settling', async () => {
    await deliverAllChanges(globalDbOf(env), env);
    const snapshot = await snapshotDb();
    const text = JSON.stringify(snapshot);
    if (text === previous) return snapshot;
    previous = text;
    await new Promise((r) => setTimeout(r, 100));
    return undefined;
  });
});

// The matrix sends B's session and B's key more requests than one rate-limit window allows:
// each test starts a fresh window (rate limits are not what this file checks).
beforeEach(() => advanceClock(API_RATE_WINDOW_MS));
afterAll(() => resetClock());

/** The 404 a missing id gets, in the route's error shape, from the route itself, carrying nothing of A's. */
function expectHidden(res: ApiResponse, what: string, flat = false) {
  const code = flat ? res.body?.error : res.body?.error?.code;
  const message = flat ? res.body?.message : res.body?.error?.message;
  expect({ what, status: res.status, code }, JSON.stringify(res.body)).toEqual({ what, status: 404, code: 'NOT_FOUND' });
  // The app's fallback for an unmatched path says "No route": this 404 must come from the route.
  expect(String(message), what).not.toMatch(/^No route/);
  const text = JSON.stringify(res.body);
  for (const marker of aMarkers()) expect(text, `${what} leaks ${marker}`).not.toContain(marker);
}

/** Runs `check` for each entry and collects the failures, so one run reports every offending route. */
async function collect<T>(entries: [string, T][], check: (name: string, entry: T) => Promise<void>) {
  const failures: string[] = [];
  for (const [name, entry] of entries) {
    try {
      await check(name, entry);
    } catch (error) {
      failures.push(`${name}: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  expect(failures).toEqual([]);
}

describe('the matrix across shards', () => {
  it("has A's two workspaces on different shards and B on A's own: ids are refused across databases and within one", () => {
    expect(placement.aElsewhere).not.toBe(A.shard);
    expect(placement.b).toBe(A.shard);
  });
});

describe("another workspace's ids in paths", () => {
  const parameterised = Object.keys(ROUTE_ACCESS).filter((key) => key.includes('/:'));

  it('every route with a path parameter has a case or a reasoned exclusion', () => {
    const uncovered = parameterised.filter((key) => !CASES[key] && !EXCLUDED[key]);
    expect(uncovered, 'give these routes a case in CASES (or a reason in EXCLUDED)').toEqual([]);
    // No stale entries: every case and exclusion names a route that exists, once.
    expect([...Object.keys(CASES), ...Object.keys(EXCLUDED)].filter((key) => !parameterised.includes(key))).toEqual([]);
    expect(Object.keys(CASES).filter((key) => EXCLUDED[key])).toEqual([]);
  });

  it("are live: A's own credential reads them on every GET route", async () => {
    const reads = Object.entries(CASES).filter(([key]) => key.startsWith('GET '));
    await collect(reads, async (key, probeOf) => {
      const access = ROUTE_ACCESS[key as RouteKey]!;
      const path = pathOf(key, probeOf(fixture).params);
      if (key.endsWith('/runs/:runId/events')) {
        // Server-Sent Events: the status and type are enough; the stream is cancelled unread.
        const response = await exports.default.fetch(`${BASE}${path}`, { headers: { 'x-auth-token': A.token } });
        expect(response.status).toBe(200);
        await response.body?.cancel();
        return;
      }
      const res = await call(path, access.auth === 'agent' ? { apiKey: aKey } : { token: A.token });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    });
  });

  it("answer 404 NOT_FOUND on every route to B's session and scoped key, and to A's own in a second workspace", async () => {
    const probes = Object.entries(CASES).flatMap(([key, probeOf]) => {
      const access = ROUTE_ACCESS[key as RouteKey]!;
      const probe = probeOf(fixture);
      const runs = outsiders().flatMap((outsider) => {
        const credentials: [string, CallOptions][] = [];
        // Agent routes take API keys only, session routes sessions only.
        if (access.auth !== 'key' && access.auth !== 'agent') credentials.push([`${outsider.name}'s session`, outsider.session]);
        if (access.auth !== 'session') credentials.push([`${outsider.name}'s key`, { apiKey: outsider.key }]);
        return credentials.map(([name, credential]): [string, { key: string; probe: Probe; credential: CallOptions }] => [
          `${key} with ${name}`,
          { key, probe, credential },
        ]);
      });
      // Paths take integer ids bare too (docs/api-conventions.md, Ids): `exec_5` and `5` name the same execution.
      const bare = Object.fromEntries(Object.entries(probe.params).map(([name, value]) => [name, value.replace(/^(exec|art|sec|key)_(\d+)$/, '$2')]));
      if (JSON.stringify(bare) !== JSON.stringify(probe.params))
        runs.push([`${runs.at(-1)![0]}, the id bare`, { ...runs.at(-1)![1], probe: { ...probe, params: bare } }]);
      return runs;
    });
    await collect(probes, async (name, { key, probe, credential }) => {
      const res = await call(pathOf(key, probe.params), { ...credential, method: key.split(' ')[0], body: probe.body });
      expectHidden(res, name, FLAT_ERRORS.has(key));
    });
  });
});

describe("another workspace's ids in bodies and headers", () => {
  /** Each names one of A's resources where B's request refers to one of its own. */
  const REFERENCES: Record<string, () => { path: string; method?: string; body?: unknown; headers?: Record<string, string>; apiKey?: boolean }> = {
    "an execution of A's skill": () => ({ path: '/api/v1/executions', body: { skill_slug: fixture.skillSlug, input: 'Go.' } }),
    "an execution joining A's trace (sessionId)": () => ({
      path: '/api/v1/executions',
      body: { skill_slug: 'bravo-skill', input: 'Go.', sessionId: fixture.traceKey },
    }),
    "a thread with A's skill": () => ({ path: '/api/v1/threads', body: { skill_slug: fixture.skillSlug } }),
    "unbinding A's binding under B's own skill": () => ({ path: `/api/v1/skills/bravo-skill/secrets/${fixture.bindingId}`, method: 'DELETE' }),
    "binding A's secret to B's skill": () => ({ path: '/api/v1/skills/bravo-skill/secrets', body: { secretId: fixture.secretId, envVar: 'STOLEN' } }),
    "a workflow installed from A's artifact": () => ({ path: '/api/v1/workflows/install-from-artifact', body: { artifactId: fixture.artifactId } }),
    "B's workflow launched from A's thread": () => ({ path: '/api/v1/workflows/bravo-flow/launch', body: { threadId: fixture.threadId } }),
    "B's workflow stream resuming A's run": () => ({ path: '/api/v1/workflows/bravo-flow/stream', body: { runId: fixture.runId, resumeData: { ok: true } } }),
    "A's consent by its link code": () => ({ path: '/api/v1/agents/connect/by-code', body: { link_code: fixture.consentLinkCode } }),
    "A's permission request by its link code": () => ({ path: '/api/v1/agents/connect/by-code', body: { link_code: fixture.requestLinkCode } }),
    "B's key rebound to A's workspace": () => ({ path: '/api/v1/workspaces/current', method: 'PUT', body: { workspace: fixture.workspaceId }, apiKey: true }),
    "B's key rebound to A's workspace by slug": () => ({
      path: '/api/v1/workspaces/current',
      method: 'PUT',
      body: { workspace: fixture.workspaceSlug },
      apiKey: true,
    }),
    "B's session selecting A's workspace (x-workspace-id)": () => ({ path: '/api/v1/skills', headers: { 'x-workspace-id': fixture.workspaceId } }),
    "B's session selecting A's workspace by slug": () => ({ path: '/api/v1/skills', headers: { 'x-workspace-id': fixture.workspaceSlug } }),
    "B accepting A's invitation addressed to someone else": () => ({ path: '/api/v1/invitations/accept', body: { token: fixture.invitationToken } }),
  };

  it('answer B 404 NOT_FOUND', async () => {
    await collect(Object.entries(REFERENCES), async (name, requestOf) => {
      const { apiKey, ...request } = requestOf();
      const res = await call(request.path, { ...request, ...(apiKey ? { apiKey: bKey } : { token: B.token }) });
      expectHidden(res, name);
    });
  });

  it("never replay A's stored answer for the same idempotency-key", async () => {
    for (const outsider of outsiders()) {
      const res = await call('/api/v1/secrets', {
        ...outsider.session,
        headers: { ...outsider.session.headers, 'idempotency-key': IDEMPOTENCY_KEY },
        body: { name: 'OWN_TOKEN', value: 'own value' },
      });
      expect({ who: outsider.name, status: res.status, replayed: res.headers.get('idempotency-replayed') }).toEqual({
        who: outsider.name,
        status: 201,
        replayed: null,
      });
      expect(res.body.name).toBe('OWN_TOKEN');
    }
  });

  it("refuse an agent step naming A's agent exactly as one naming no agent", async () => {
    const answer = async (agentId: string) => {
      const res = await call('/api/v1/workflows/bravo-agent-flow/install', {
        token: B.token,
        body: definition('bravo-agent-flow', [{ type: 'agent', id: 'a', agentId }]),
      });
      return { status: res.status, code: res.body.error?.code, field: res.body.error?.details?.field };
    };
    const missing = await answer(`${B.workspaceId}:no-such-agent`);
    expect(missing).toEqual({ status: 400, code: 'INVALID_INPUT', field: 'graph.0.agentId' });
    expect(await answer(`${A.workspaceId}:alpha-agent`)).toEqual(missing);
  });
});

/** Every MCP tool taking an id: A's value for each id argument, plus whatever else the tool requires. */
const TOOL_CASES: Record<string, (a: Fixture) => Record<string, unknown>> = {
  'get-skill-details': (a) => ({ slug: a.skillSlug }),
  'uninstall-skill': (a) => ({ slug: a.skillSlug }),
  'execute-skill': (a) => ({ slug: a.skillSlug, input: 'Summarise.' }),
  'run-skill-eval': (a) => ({ slug: a.skillSlug, budget: 0.01 }),
  'get-skill-eval': (a) => ({ slug: a.skillSlug, evalId: a.evalId }),
  'get-execution-status': (a) => ({ executionId: a.executionId }),
  'cancel-execution': (a) => ({ executionId: a.idleExecutionId }),
  'get-artifact': (a) => ({ artifactId: a.artifactId }),
  'download-artifact': (a) => ({ artifactId: a.artifactId }),
  'delete-artifact': (a) => ({ artifactId: a.artifactId }),
  'start-workflow': (a) => ({ workflowId: `${a.workspaceId}:${a.workflowSlug}` }),
  'get-workflow-run': (a) => ({ runId: a.runId }),
  'cancel-workflow-run': (a) => ({ runId: a.runId }),
  'resume-workflow-run': (a) => ({ runId: a.runId, resumeData: { ok: true } }),
  'get-retention': (a) => ({ workspaceId: a.workspaceId }),
  'set-retention': (a) => ({ workspaceId: a.workspaceId, traces: 1 }),
  'get-limits': (a) => ({ workspaceId: a.workspaceId }),
  'set-limits': (a) => ({ workspaceId: a.workspaceId, monthly: 1 }),
  'get-skill-guard': (a) => ({ workspaceId: a.workspaceId }),
  'set-skill-guard': (a) => ({ workspaceId: a.workspaceId, enabled: true }),
  'rerun-workflow-run': (a) => ({ runId: a.runId, fromStep: 'approve' }),
  'list-workflow-schedules': (a) => ({ slug: a.workflowSlug }),
  'create-workflow-schedule': (a) => ({ slug: a.workflowSlug, cron: '0 0 1 1 *', timezone: 'UTC', input: {} }),
  'pause-workflow-schedule': (a) => ({ slug: a.workflowSlug, scheduleId: a.scheduleId }),
  'resume-workflow-schedule': (a) => ({ slug: a.workflowSlug, scheduleId: a.scheduleId }),
  'delete-workflow-schedule': (a) => ({ slug: a.workflowSlug, scheduleId: a.scheduleId }),
  'list-workflow-triggers': (a) => ({ slug: a.workflowSlug }),
  'list-workflow-trigger-deliveries': (a) => ({ slug: a.workflowSlug, triggerId: a.triggerId }),
  'create-workflow-trigger': (a) => ({ slug: a.workflowSlug }),
  'delete-workflow-trigger': (a) => ({ slug: a.workflowSlug, triggerId: a.triggerId }),
  'get-telemetry': (a) => ({ workspaceId: a.workspaceId }),
  'set-telemetry': (a) => ({ workspaceId: a.workspaceId, endpoint: null }),
  'get-webhook': (a) => ({ webhookId: a.webhookId }),
  'update-webhook': (a) => ({ webhookId: a.webhookId, enabled: false }),
  'delete-webhook': (a) => ({ webhookId: a.webhookId }),
  'rotate-webhook-secret': (a) => ({ webhookId: a.webhookId }),
  'list-webhook-deliveries': (a) => ({ webhookId: a.webhookId }),
  'redeliver-webhook': (a) => ({ webhookId: a.webhookId, deliveryId: 'dlv_1' }),
};

/** Tools with an argument named like an id that names no resource of a workspace. */
const TOOL_EXCLUDED: Record<string, string> = {
  'install-skill': 'its slug names a marketplace entry: the public catalog, the same for every caller',
  'list-artifacts': "its executionId filters the list: another workspace's execution lists nothing (the artifacts?executionId= case)",
};

/** An argument that names a resource: `slug`, `id`, or `<thing>Id` (`stepId` is a step inside the run named by `runId`). */
const isIdArgument = (name: string) => name === 'slug' || name === 'id' || (/^[a-z]+Id$/.test(name) && name !== 'stepId');

describe('lists and reads without an id', () => {
  it("show B nothing of A's on any GET route of the table", async () => {
    const reads = Object.entries(ROUTE_ACCESS).filter(([key, access]) => key.startsWith('GET ') && !key.includes('/:') && access.auth !== 'public');
    await collect(reads, async (key, access) => {
      const res = await call(key.split(' ')[1]!, access.auth === 'agent' || access.auth === 'key' ? { apiKey: bKey } : { token: B.token });
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
      const text = JSON.stringify(res.body);
      for (const marker of [...aMarkers(), ...aIds()]) expect(text, `leaks ${marker}`).not.toContain(marker);
    });
  });

  it("show B nothing of A's from any read-only MCP tool that needs no argument", async () => {
    const client = await connectMcp({ 'x-api-key': bKey });
    const { tools } = await client.listTools();
    const reads = tools.filter((t) => t.annotations?.readOnlyHint && !(t.inputSchema.required ?? []).length);
    expect(reads.map((t) => t.name)).toEqual(
      expect.arrayContaining(['list-installed-skills', 'list-executions', 'list-artifacts', 'read-memory', 'list-workflow-runs', 'list-connectors']),
    );
    await collect(
      reads.map((t): [string, string] => [t.name, t.name]),
      async (name) => {
        const text = JSON.stringify((await client.callTool({ name, arguments: {} })).content);
        for (const marker of [...aMarkers(), ...aIds()]) expect(text, `leaks ${marker}`).not.toContain(marker);
      },
    );
    await client.close();
  });

  it("list nothing for B filtering by A's execution (artifacts?executionId=)", async () => {
    for (const outsider of outsiders()) {
      for (const credential of [outsider.session, { apiKey: outsider.key }]) {
        const res = await call(`/api/v1/artifacts?executionId=${fixture.executionId}`, credential);
        expect({ who: outsider.name, status: res.status, data: res.body.data }).toEqual({ who: outsider.name, status: 200, data: [] });
      }
    }
    const client = await connectMcp({ 'x-api-key': bKey });
    const listed = await client.callTool({ name: 'list-artifacts', arguments: { executionId: fixture.executionId } });
    expect((listed.structuredContent as { data: unknown[] }).data).toEqual([]);
    await client.close();
    // A's own filter finds the run's output, so the empty answers above are the filter's doing.
    expect((await call(`/api/v1/artifacts?executionId=${fixture.executionId}`, { token: A.token })).body.data.map((a: { id: string }) => a.id)).toContain(
      fixture.artifactId,
    );
  });

  it("ignore x-workspace-id naming A's workspace on B's key (spec 5.1: keys are bound to their workspace)", async () => {
    const res = await call('/api/v1/skills', { apiKey: bKey, headers: { 'x-workspace-id': fixture.workspaceId } });
    expect(res.status).toBe(200);
    expect(res.body.map((skill: { slug: string }) => skill.slug)).toEqual(['bravo-skill']);
  });
});

describe('MCP tools', () => {
  it("answer a NOT_FOUND tool error for A's ids to B's session and key, and to A's own in a second workspace", async () => {
    const clients: Record<string, Awaited<ReturnType<typeof connectMcp>>> = {};
    for (const outsider of outsiders()) {
      clients[`${outsider.name}'s session`] = await connectMcp({ 'x-auth-token': outsider.session.token!, ...outsider.session.headers });
      clients[`${outsider.name}'s key`] = await connectMcp({ 'x-api-key': outsider.key });
    }
    const { tools } = await clients["B's key"]!.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(MCP_TOOLS.map((t) => t.name).sort());
    const withIds = tools.filter((t) => Object.keys(t.inputSchema.properties ?? {}).some(isIdArgument)).map((t) => t.name);
    expect(
      withIds.filter((name) => !TOOL_CASES[name] && !TOOL_EXCLUDED[name]),
      'give these tools a case in TOOL_CASES (or a reason in TOOL_EXCLUDED)',
    ).toEqual([]);
    expect([...Object.keys(TOOL_CASES), ...Object.keys(TOOL_EXCLUDED)].filter((name) => !withIds.includes(name))).toEqual([]);

    const calls = Object.entries(TOOL_CASES).flatMap(([tool, argsOf]) =>
      Object.entries(clients).map(([credential, client]): [string, () => Promise<ToolResult>] => [
        `${tool} with ${credential}`,
        () => client.callTool({ name: tool, arguments: argsOf(fixture) }),
      ]),
    );
    await collect(calls, async (name, callTool) => {
      const result = await callTool();
      expect(result.isError, JSON.stringify(result.content)).toBe(true);
      expect(result.structuredContent).toBeUndefined();
      expect(toolJson(result).error.code).toBe('NOT_FOUND');
      const text = JSON.stringify(result.content);
      for (const marker of aMarkers()) expect(text, `${name} leaks ${marker}`).not.toContain(marker);
    });
    await Promise.all(Object.values(clients).map((client) => client.close()));
  });
});

describe('trace appends', () => {
  it("refuse B's appends to A's trace, with or without seq and attribution, and append nothing", async () => {
    const turns = async () => (await call(`/api/v1/traces/${fixture.traceId}/events`, { token: A.token })).body.items;
    const seen = await turns();
    expect(seen.some((t: { payload: { text?: string } }) => t.payload.text === MARK.turn)).toBe(true);
    const path = `/api/v1/traces/${fixture.traceId}/events`;
    const attempts: [string, Parameters<typeof call>[1]][] = [
      ['session', { token: B.token, body: { events: [{ type: 'user.message', payload: { text: 'injected' } }] } }],
      ['key, next seq', { apiKey: bKey, body: { events: [{ type: 'agent.text', payload: { text: 'injected' }, seq: seen.at(-1).seq + 1 }] } }],
      ['key, a used seq', { apiKey: bKey, body: { events: [{ type: 'agent.text', payload: { text: 'injected' }, seq: seen.at(-1).seq }] } }],
      [
        'session, as an agent',
        { token: B.token, headers: { 'x-agent-slug': 'alpha-agent' }, body: { events: [{ type: 'agent.text', payload: { text: 'injected' } }] } },
      ],
    ];
    await collect(attempts, async (name, options) => expectHidden(await call(path, options), `append with B's ${name}`));
    expect(await turns()).toEqual(seen);
  });
});

describe('names each workspace has its own of', () => {
  it("give B its own skill and workflow under A's slugs, and leave A's connector alone", async () => {
    const bs = { token: B.token };
    const skill = await call(`/api/v1/skills/${fixture.skillSlug}`, {
      ...bs,
      method: 'PUT',
      body: { name: 'Mine', description: 'B’s own.', category: 'productivity', prompt: '# Mine' },
    });
    expect(skill.status).toBe(200);
    expect((await call(`/api/v1/skills/${fixture.skillSlug}/versions`, bs)).body).toHaveLength(1);
    const workflow = await call(`/api/v1/workflows/${fixture.workflowSlug}/install`, {
      ...bs,
      body: definition('mine', [{ type: 'mapping', id: 'm', mapConfig: '{}' }]),
    });
    expect(workflow.status).toBe(201);
    expect(workflow.body.workspaceId).toBe(B.workspaceId);
    expect((await call('/api/v1/connectors/github/status', bs)).body.status).toBe('not_connected');
    expect((await call('/api/v1/connectors/github/disconnect', { ...bs, method: 'POST' })).body.status).toBe('not_connected');
    for (const res of [skill, workflow]) for (const marker of aMarkers()) expect(JSON.stringify(res.body)).not.toContain(marker);
  });
});

describe("A's workspace afterwards", () => {
  it('holds every row it held before, and no new row names any of its ids', async () => {
    const after = await snapshotDb();
    const changed: string[] = [];
    for (const [table, rows] of Object.entries(before)) {
      const now = new Set(after[table]);
      for (const row of rows) if (!now.has(row)) changed.push(`${table}: ${row} changed or went`);
      const was = new Set(rows);
      for (const row of after[table] ?? []) if (!was.has(row) && aIds().some((id) => row.includes(id))) changed.push(`${table}: new ${row}`);
    }
    expect(changed).toEqual([]);
  });

  it("still works for A: the ids B was refused are A's live resources", async () => {
    const as = { token: A.token };
    const download = await call(`/api/v1/artifacts/${fixture.artifactId}/download`, as);
    expect(download.status).toBe(200);
    expect(String(download.body).length).toBeGreaterThan(0);
    expect((await call(`/api/v1/connectors/github/status`, as)).body.status).toBe('connected');
    // The ids only the refused writes used: A's own writes on them succeed.
    expect((await call(`/api/v1/secrets/${fixture.secretId}`, { ...as, method: 'PATCH', body: { value: 'rotated' } })).status).toBe(200);
    expect((await call(`/api/v1/skills/${fixture.skillSlug}/secrets/${fixture.bindingId}`, { ...as, method: 'DELETE' })).status).toBe(200);
    expect((await call(`/api/v1/skills/${fixture.skillSlug}/versions/${fixture.versionNumber}/restore`, { ...as, body: {} })).status).toBe(200);
    expect((await call(`/api/v1/executions/${fixture.idleExecutionId}/cancel`, { ...as, body: {} })).status).toBe(200);
    const resumed = await call(`/api/v1/workflows/runs/${fixture.runId}/resume`, { ...as, body: { resumeData: { ok: true } } });
    expect(resumed.body).toEqual({ runId: fixture.runId, status: 'running' });
  });
});
