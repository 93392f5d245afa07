import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { telemetryDestinations, type TelemetryDestinationRow } from '../../schema';
import type { Principal } from '../auth/principal';
import type { Env, GlobalDb, ShardDb } from '../env';
import { invalidInput } from '../errors';
import { now, toIso } from '../lib/clock';
import { decryptSecret, encryptSecret } from '../lib/encryption';
import { outboundUrl } from '../lib/outbound';
import { recordChange } from './audit';
import { requireCurrentWorkspace, requireOwnedWorkspace } from './workspaces';

/**
 * A workspace's OpenTelemetry destination (docs/telemetry.md): where its runs' traces are
 * exported (OTLP/HTTP JSON) and the headers sent with them. The owner sets it; the headers are
 * write-only (their names are shown, never their values) and stored encrypted.
 */

/** Headers the export itself sets, or that would change where and how it is sent. */
const RESERVED_HEADERS = new Set(['host', 'content-type', 'content-length', 'content-encoding', 'transfer-encoding', 'connection']);
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;

const Headers = z
  .record(
    z.string().regex(HEADER_NAME, "a header name (letters, digits and !#$%&'*+.^_`|~-)"),
    z
      .string()
      .trim()
      .min(1)
      .max(4096)
      .regex(/^[\x20-\x7e]+$/, 'printable ASCII characters'),
  )
  .refine((headers) => Object.keys(headers).length <= 20, { message: 'at most 20 headers' })
  .describe('Headers sent with every export (e.g. an API key of the collector); write-only: answers show their names only');

export const TelemetryBody = z.object({
  endpoint: z
    .string()
    .min(1)
    .max(2048)
    .nullable()
    .describe('The OTLP/HTTP traces URL (e.g. https://collector.example.com/v1/traces): https and a public host; null removes the destination'),
  headers: Headers.optional().describe('Replaces the headers sent with every export; omitted: the ones set before are kept'),
});
export type TelemetryBody = z.infer<typeof TelemetryBody>;

export const TelemetryDestination = z.object({
  endpoint: z.string().nullable().describe('Where traces are exported, or null when none is set'),
  headerNames: z.array(z.string()).describe('The names of the headers sent with each export (their values are never shown)'),
  exported: z.number().describe('Traces exported since the destination was set'),
  dropped: z.number().describe('Traces dropped since the destination was set: every attempt to send them failed'),
  lastError: z.string().nullable().describe('Why the last failed attempt failed, or null'),
  lastErrorAt: z.string().nullable(),
});
export type TelemetryDestination = z.infer<typeof TelemetryDestination>;

const NONE: TelemetryDestination = { endpoint: null, headerNames: [], exported: 0, dropped: 0, lastError: null, lastErrorAt: null };

const present = (row: TelemetryDestinationRow | undefined): TelemetryDestination =>
  row
    ? {
        endpoint: row.endpoint,
        headerNames: row.headerNames,
        exported: row.exported,
        dropped: row.dropped,
        lastError: row.lastError,
        lastErrorAt: row.lastErrorAt === null ? null : toIso(row.lastErrorAt),
      }
    : NONE;

/** The GCM additional data of a destination's headers: a ciphertext copied to another workspace does not decrypt. */
const headersContext = (workspaceId: string) => `telemetry-headers:${workspaceId}`;

export const destinationOf = async (db: ShardDb, workspaceId: string) =>
  (await db.select().from(telemetryDestinations).where(eq(telemetryDestinations.workspaceId, workspaceId)).limit(1))[0];

/** The headers a destination sends, opened; throws when they do not decrypt under the workspace. */
export async function exportHeaders(encryptionKey: string | undefined, row: TelemetryDestinationRow): Promise<Record<string, string>> {
  const plain = await decryptSecret(encryptionKey, headersContext(row.workspaceId), row.headers);
  if (plain === null) throw new Error('The telemetry headers do not decrypt under their workspace');
  return JSON.parse(plain) as Record<string, string>;
}

export async function getTelemetry(db: ShardDb, globalDb: GlobalDb, principal: Principal, workspace: string): Promise<TelemetryDestination> {
  const ws = await requireCurrentWorkspace(globalDb, principal, workspace);
  return present(await destinationOf(db, ws.id));
}

/** Sets (or, with a null endpoint, removes) the destination; owners only. Setting it again starts its counts over. */
export async function setTelemetry(
  db: ShardDb,
  globalDb: GlobalDb,
  env: Env,
  principal: Principal,
  workspace: string,
  body: TelemetryBody,
): Promise<TelemetryDestination> {
  const ws = await requireOwnedWorkspace(globalDb, principal, workspace, 'Only the workspace owner can change the telemetry destination');
  if (body.endpoint === null) {
    await db.batch([
      db.delete(telemetryDestinations).where(eq(telemetryDestinations.workspaceId, ws.id)),
      ...recordChange(db, principal, {
        action: 'workspace.telemetry_removed',
        resourceType: 'workspace',
        resourceId: ws.id,
        activity: 'The OpenTelemetry destination was removed',
      }),
    ]);
    return NONE;
  }
  outboundUrl(body.endpoint, 'endpoint', env);
  const reserved = Object.keys(body.headers ?? {}).find((name) => RESERVED_HEADERS.has(name.toLowerCase()));
  if (reserved !== undefined) throw invalidInput(`headers.${reserved}`, 'reserved', `The export sets ${reserved} itself`);
  const existing = await destinationOf(db, ws.id);
  const headers = body.headers ?? (existing ? await exportHeaders(env.ENCRYPTION_KEY, existing) : {});
  const values = {
    endpoint: body.endpoint,
    headerNames: Object.keys(headers),
    headers: await encryptSecret(env.ENCRYPTION_KEY, headersContext(ws.id), JSON.stringify(headers)),
    exported: 0,
    dropped: 0,
    lastError: null,
    lastErrorAt: null,
    updatedAt: now(),
  };
  const [[row]] = await db.batch([
    db
      .insert(telemetryDestinations)
      .values({ workspaceId: ws.id, ...values })
      .onConflictDoUpdate({ target: telemetryDestinations.workspaceId, set: values })
      .returning(),
    ...recordChange(db, principal, {
      action: 'workspace.telemetry_updated',
      resourceType: 'workspace',
      resourceId: ws.id,
      metadata: { endpoint: body.endpoint, headerNames: values.headerNames },
      activity: `Runs' traces are exported to ${body.endpoint}`,
    }),
  ]);
  return present(row);
}
