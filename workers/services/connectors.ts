import { and, eq } from 'drizzle-orm';
import { z } from 'zod';
import { connectorConnections, executionConnectors, type ConnectorConnectionRow } from '../../schema';
import { requireScope } from '../auth/actor';
import { globalDbOf } from '../lib/db';
import type { Principal } from '../auth/principal';
import { GithubApi, GithubRepo, GitRef, RepoPath } from '../connectors/github';
import { CONNECTORS, githubBase, runGithubAction, type ConnectorDefinition, type RunConnector } from '../connectors/registry';
import type { ShardDb, Env } from '../env';
import { AppError, invalidInput } from '../errors';
import { now, toIso } from '../lib/clock';
import { decryptSecret, encryptSecret } from '../lib/encryption';
import { headerToken } from '../lib/outbound';
import { valueProblem } from '../workflows/json-schema';
import { recordChange, recordChangeAfter } from './audit';

/**
 * Connectors (issue 10): the registry's types, each workspace's connections (one encrypted
 * token per type), the read operations on a connection (sources) and the actions.
 *
 * Errors: an unknown type is 400 INVALID_CONNECTOR; a type this deployment is not configured
 * for is 503 CONNECTOR_NOT_CONFIGURED (naming the setting); a type with no connection in the
 * workspace, or whose token the provider refuses or that no longer decrypts, is 409
 * CONNECTOR_NOT_CONNECTED. Scopes that depend on the connector (`connector:<app>:read` for
 * sources, `connector:<app>:exec` for connecting, disconnecting and actions) are checked here,
 * so REST routes, MCP tools and run tools share them, each honouring session and one-time grants
 * of the scope (spec 5.5) as a route's own scope does; `grantToken` is the caller's
 * `x-permission-grant`.
 */

export const ConnectBody = z.object({ token: headerToken(1, 1024) });
export type ConnectBody = z.infer<typeof ConnectBody>;

/**
 * - `connected`: a token is stored (and, on the status route, the provider accepted it just now);
 * - `not_connected`: no token is stored in this workspace;
 * - `not_configured`: this deployment lacks the connector's settings;
 * - `token_rejected` (status route only): the provider refused the stored token: connect again;
 * - `token_unreadable`: the stored token no longer decrypts (ENCRYPTION_KEY changed): connect again.
 */
export const CONNECTION_STATUSES = ['connected', 'not_connected', 'not_configured', 'token_rejected', 'token_unreadable'] as const;

const RateLimitSchema = z.object({ limit: z.number(), remaining: z.number(), resetAt: z.string() });

export const ConnectorStatus = z.object({
  type: z.string(),
  app: z.string(),
  name: z.string(),
  configured: z.boolean(),
  status: z.enum(CONNECTION_STATUSES),
  /** Who the token acts as at the provider (GitHub login). */
  account: z.string().nullable(),
  /** The token's last four characters. */
  tokenPreview: z.string().nullable(),
  connectedAt: z.string().nullable(),
  /** The provider's rate-limit headers from the check just made (status and connect only). */
  rateLimit: RateLimitSchema.nullable().optional(),
});
export type ConnectorStatus = z.infer<typeof ConnectorStatus>;

export const ConnectorSummary = ConnectorStatus.omit({ rateLimit: true }).extend({
  description: z.string(),
  connect: z.object({ method: z.literal('token'), help: z.string() }),
  scopes: z.object({ read: z.string(), exec: z.string() }),
  reads: z.array(z.object({ name: z.string(), description: z.string() })),
  actions: z.array(z.object({ name: z.string(), title: z.string(), description: z.string(), writes: z.boolean() })),
  triggers: z.array(z.object({ name: z.string(), description: z.string(), delivery: z.string() })),
});
export const ConnectorList = z.object({ connectors: z.array(ConnectorSummary) });

export const ConnectorType = z.string().min(1).max(64);

/** The registry entry for `type`, or 400 INVALID_CONNECTOR naming the known ones. */
export function connectorDefinition(type: string): ConnectorDefinition {
  const definition = CONNECTORS.find((c) => c.type === type);
  if (!definition) {
    throw new AppError('INVALID_CONNECTOR', 400, `There is no connector "${type}"`, { connector: type, known: CONNECTORS.map((c) => c.type) });
  }
  return definition;
}

function requireConfigured(env: Env, definition: ConnectorDefinition): void {
  const configuration = definition.configuration(env);
  if (!configuration.configured) {
    throw new AppError('CONNECTOR_NOT_CONFIGURED', 503, `${definition.name} is not configured on this deployment: ${configuration.reason}`, {
      connector: definition.type,
      setting: configuration.setting,
    });
  }
}

/** `connector:<app>:read|exec` on the caller's credential or a grant of it (sessions and `*` keys hold every scope). */
const requireConnectorScope = (env: Env, principal: Principal, definition: ConnectorDefinition, level: 'read' | 'exec', grantToken: string | undefined) =>
  requireScope(globalDbOf(env), principal, `connector:${definition.app}:${level}`, grantToken);

/** The GCM additional data: a token copied to another workspace's or type's row does not decrypt. */
const tokenContext = (workspaceId: string, type: string) => `connector:${workspaceId}:${type}`;

const findConnection = async (db: ShardDb, workspaceId: string, type: string): Promise<ConnectorConnectionRow | undefined> =>
  (
    await db
      .select()
      .from(connectorConnections)
      .where(and(eq(connectorConnections.workspaceId, workspaceId), eq(connectorConnections.connectorType, type)))
      .limit(1)
  )[0];

function statusOf(env: Env, definition: ConnectorDefinition, row: ConnectorConnectionRow | undefined): ConnectorStatus {
  const configured = definition.configuration(env).configured;
  return {
    type: definition.type,
    app: definition.app,
    name: definition.name,
    configured,
    status: !configured ? 'not_configured' : row ? 'connected' : 'not_connected',
    account: row?.account ?? null,
    tokenPreview: row?.tokenPreview ?? null,
    connectedAt: row ? toIso(row.updatedAt) : null,
  };
}

/** Every connector type with this workspace's stored connection state (no provider call). */
export async function listConnectors(db: ShardDb, env: Env, principal: Principal): Promise<z.infer<typeof ConnectorList>> {
  const rows = await db.select().from(connectorConnections).where(eq(connectorConnections.workspaceId, principal.workspaceId));
  return {
    connectors: CONNECTORS.map((definition) => ({
      ...statusOf(
        env,
        definition,
        rows.find((r) => r.connectorType === definition.type),
      ),
      description: definition.description,
      connect: definition.connect,
      scopes: { read: `connector:${definition.app}:read`, exec: `connector:${definition.app}:exec` },
      reads: definition.reads,
      actions: definition.actions.map(({ name, title, description, writes }) => ({ name, title, description, writes })),
      triggers: definition.triggers,
    })),
  };
}

/** The provider's API with a token (GitHub is the only type with one so far). */
function githubApi(env: Env, token: string): GithubApi {
  const base = githubBase(env);
  if (!base) requireConfigured(env, connectorDefinition('github'));
  return new GithubApi(base!, token);
}

/** The connection's status, checked against the provider when a token is stored. */
export async function connectorStatus(db: ShardDb, env: Env, principal: Principal, type: string): Promise<ConnectorStatus> {
  const definition = connectorDefinition(type);
  const row = await findConnection(db, principal.workspaceId, definition.type);
  const stored = statusOf(env, definition, row);
  if (stored.status !== 'connected') return stored;
  const token = await decryptSecret(env.ENCRYPTION_KEY, tokenContext(principal.workspaceId, definition.type), row!.ciphertext);
  if (token === null) return { ...stored, status: 'token_unreadable' };
  const api = githubApi(env, token);
  try {
    await api.user();
  } catch (error) {
    if (error instanceof AppError && error.code === 'CONNECTOR_NOT_CONNECTED') return { ...stored, status: 'token_rejected', rateLimit: api.rateLimit };
    throw error;
  }
  return { ...stored, rateLimit: api.rateLimit };
}

/**
 * Stores the workspace's token for `type` (replacing any), after the provider accepted it:
 * a refused token is 400 INVALID_INPUT on `token` and nothing is stored.
 */
export async function connectConnector(
  db: ShardDb,
  env: Env,
  principal: Principal,
  type: string,
  body: ConnectBody,
  grantToken?: string,
): Promise<ConnectorStatus> {
  const definition = connectorDefinition(type);
  await requireConnectorScope(env, principal, definition, 'exec', grantToken);
  requireConfigured(env, definition);
  const api = githubApi(env, body.token);
  let account: string;
  try {
    account = (await api.user()).login;
  } catch (error) {
    if (error instanceof AppError && error.code === 'CONNECTOR_NOT_CONNECTED') {
      throw invalidInput('token', 'rejected', `${definition.name} refused the token (${String(error.details?.upstreamMessage ?? 'unauthorized')})`);
    }
    throw error;
  }
  const ciphertext = await encryptSecret(env.ENCRYPTION_KEY, tokenContext(principal.workspaceId, definition.type), body.token);
  const tokenPreview = `…${body.token.slice(-4)}`;
  const t = now();
  const connection = {
    workspaceId: principal.workspaceId,
    connectorType: definition.type,
    ciphertext,
    tokenPreview,
    account,
    createdBy: principal.userId,
    createdAt: t,
    updatedAt: t,
  };
  await db.batch([
    db
      .insert(connectorConnections)
      .values(connection)
      .onConflictDoUpdate({
        target: [connectorConnections.workspaceId, connectorConnections.connectorType],
        set: { ciphertext, tokenPreview, account, updatedAt: t },
      }),
    ...recordChange(db, principal, {
      action: 'connector.connected',
      resourceType: 'connector',
      resourceId: definition.type,
      metadata: { account, tokenPreview },
      activity: `${definition.name} was connected as ${account}`,
    }),
  ]);
  return {
    ...statusOf(env, definition, connection),
    rateLimit: api.rateLimit,
  };
}

/** Forgets the workspace's token for `type`; without a connection it changes (and records) nothing. */
export async function disconnectConnector(db: ShardDb, env: Env, principal: Principal, type: string, grantToken?: string): Promise<ConnectorStatus> {
  const definition = connectorDefinition(type);
  await requireConnectorScope(env, principal, definition, 'exec', grantToken);
  const row = await findConnection(db, principal.workspaceId, definition.type);
  if (row) {
    await db.batch([
      db
        .delete(connectorConnections)
        .where(and(eq(connectorConnections.workspaceId, principal.workspaceId), eq(connectorConnections.connectorType, definition.type))),
      ...recordChange(db, principal, {
        action: 'connector.disconnected',
        resourceType: 'connector',
        resourceId: definition.type,
        metadata: { account: row.account },
        activity: `${definition.name} (${row.account}) was disconnected`,
      }),
    ]);
  }
  return statusOf(env, definition, undefined);
}

/** The workspace's GitHub API, or CONNECTOR_NOT_CONFIGURED / CONNECTOR_NOT_CONNECTED. No scope check: callers do it (run tools act for the run). */
export async function workspaceGithub(db: ShardDb, env: Env, workspaceId: string): Promise<GithubApi> {
  const definition = connectorDefinition('github');
  requireConfigured(env, definition);
  const row = await findConnection(db, workspaceId, definition.type);
  if (!row)
    throw new AppError('CONNECTOR_NOT_CONNECTED', 409, 'GitHub is not connected in this workspace: POST /api/v1/connectors/github/connect', {
      connector: 'github',
    });
  const token = await decryptSecret(env.ENCRYPTION_KEY, tokenContext(workspaceId, definition.type), row.ciphertext);
  if (token === null) {
    throw new AppError('CONNECTOR_NOT_CONNECTED', 409, 'The stored GitHub token can no longer be read (the encryption key changed): connect again', {
      connector: 'github',
      reason: 'token_unreadable',
    });
  }
  return githubApi(env, token);
}

/** A source connector's API for a read (sources) by the caller: scope `connector:<app>:read`. */
export async function sourceApi(db: ShardDb, env: Env, principal: Principal, type: string, grantToken?: string): Promise<GithubApi> {
  const definition = connectorDefinition(type);
  await requireConnectorScope(env, principal, definition, 'read', grantToken);
  return workspaceGithub(db, env, principal.workspaceId);
}

export const SourceArgs = z.object({ connector: ConnectorType.default('github'), repo: GithubRepo });
export const TreeArgs = SourceArgs.extend({ ref: GitRef.optional(), path: RepoPath.optional() });
export const ContentArgs = SourceArgs.extend({ path: RepoPath.min(1), ref: GitRef.optional() });

export const listGithubRepos = async (db: ShardDb, env: Env, principal: Principal, grantToken?: string) =>
  (await sourceApi(db, env, principal, 'github', grantToken)).repositories();

export const listBranches = async (db: ShardDb, env: Env, principal: Principal, args: z.infer<typeof SourceArgs>, grantToken?: string) =>
  (await sourceApi(db, env, principal, args.connector, grantToken)).branches(args.repo);

export const listSources = async (db: ShardDb, env: Env, principal: Principal, args: z.infer<typeof TreeArgs>, grantToken?: string) =>
  (await sourceApi(db, env, principal, args.connector, grantToken)).tree(args.repo, args.ref, args.path);

export const getSourceContent = async (db: ShardDb, env: Env, principal: Principal, args: z.infer<typeof ContentArgs>, grantToken?: string) =>
  (await sourceApi(db, env, principal, args.connector, grantToken)).content(args.repo, args.path, args.ref);

/** Text search over every connector's actions: each word must appear in the connector's or the action's name, title or description. */
export function searchConnectorActions(query = '', connector?: string) {
  if (connector !== undefined) connectorDefinition(connector);
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  const actions = CONNECTORS.filter((c) => connector === undefined || c.type === connector).flatMap((c) =>
    c.actions
      .filter((a) => {
        const text = `${c.type} ${c.name} ${a.name} ${a.name.replace(/_/g, ' ')} ${a.title} ${a.description}`.toLowerCase();
        return words.every((w) => text.includes(w));
      })
      .map((a) => ({ connector: c.type, ...a, scope: `connector:${c.app}:exec` })),
  );
  return { actions };
}

export const RunActionArgs = z.object({
  connector: ConnectorType,
  action: z.string().min(1).max(100),
  input: z.record(z.string(), z.unknown()).default({}),
});

/** Runs one action with the workspace's connection; needs `connector:<app>:exec`. Recorded in the audit log. */
export async function runConnectorAction(db: ShardDb, env: Env, principal: Principal, args: z.infer<typeof RunActionArgs>, grantToken?: string) {
  const definition = connectorDefinition(args.connector);
  await requireConnectorScope(env, principal, definition, 'exec', grantToken);
  const action = definition.actions.find((a) => a.name === args.action);
  if (!action) {
    throw invalidInput('action', 'unknown', `${definition.name} has no action "${args.action}"`, { known: definition.actions.map((a) => a.name) });
  }
  const problem = valueProblem({ $schema: 'https://json-schema.org/draft/2020-12/schema', ...action.inputSchema }, args.input);
  if (problem) throw invalidInput(`input${problem.pointer.replace(/\//g, '.')}`, 'schema', `input${problem.pointer}: ${problem.message}`);
  const api = await workspaceGithub(db, env, principal.workspaceId);
  const result = await runGithubAction(api, action.name, args.input);
  await recordChangeAfter(db, principal, {
    action: 'connector.action',
    resourceType: 'connector',
    resourceId: definition.type,
    metadata: { action: action.name, repo: String(args.input.repo ?? '') },
    activity: `${definition.name}: ${action.title.toLowerCase()} in ${String(args.input.repo ?? '')}`,
  });
  return { connector: definition.type, action: action.name, result };
}

/** The trigger types connectors declare (of one connector, or of all). */
export function listConnectorTriggers(connector?: string) {
  const definitions = connector === undefined ? CONNECTORS : [connectorDefinition(connector)];
  return { triggers: definitions.flatMap((c) => c.triggers.map((t) => ({ connector: c.type, ...t }))) };
}

/**
 * The `connector` of a skill run (spec 4.3), checked before the execution exists:
 * `github` needs `connector:github:read`, the deployment's configuration, the workspace's
 * connection and a repository the token can see; `remote` (no source: the run works on its
 * input alone, in the service's own runtime) is accepted as it is.
 */
export async function checkRunConnector(
  db: ShardDb,
  env: Env,
  principal: Principal,
  connector: { type: string; fields: Record<string, unknown> },
  grantToken?: string,
): Promise<RunConnector> {
  if (connector.type === 'remote') {
    const extra = Object.keys(connector.fields);
    if (extra.length) throw invalidInput(`connector.fields.${extra[0]}`, 'unrecognized', 'A remote connector takes no fields');
    return { type: 'remote' };
  }
  const definition = connectorDefinition(connector.type);
  const repo = GithubRepo.safeParse(connector.fields.repo);
  if (!repo.success) throw invalidInput('connector.fields.repo', 'owner/repo', 'connector.fields.repo must be a repository shaped owner/repo');
  await requireConnectorScope(env, principal, definition, 'read', grantToken);
  await (await workspaceGithub(db, env, principal.workspaceId)).defaultBranch(repo.data);
  return { type: 'github', repo: repo.data };
}

/** Remembers a run's connector so every turn of the execution gets the same tools. */
export const saveRunConnector = (db: ShardDb, executionId: number, workspaceId: string, connector: RunConnector) =>
  db.insert(executionConnectors).values({ executionId, workspaceId, connectorType: connector.type, repo: connector.type === 'github' ? connector.repo : null });

/** A run's connector as stored: none or one row, as a read another D1 batch can carry. */
export const runConnectorRow = (db: ShardDb, executionId: number) =>
  db.select().from(executionConnectors).where(eq(executionConnectors.executionId, executionId)).limit(1);

export function runConnectorFrom(row: typeof executionConnectors.$inferSelect | undefined): RunConnector | undefined {
  if (!row) return undefined;
  return row.connectorType === 'github' && row.repo ? { type: 'github', repo: row.repo } : { type: 'remote' };
}

export const runConnectorOf = async (db: ShardDb, executionId: number) => runConnectorFrom((await runConnectorRow(db, executionId))[0]);
