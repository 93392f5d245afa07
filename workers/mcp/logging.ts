import type { LoggingLevel, McpServer } from '@modelcontextprotocol/server';
import { and, eq, like, notExists, sql } from 'drizzle-orm';
import { mcpLogLevels, sessions } from '../../schema';
import type { Principal } from '../auth/principal';
import type { GlobalDb } from '../env';
import { now } from '../lib/clock';

const SESSION_PREFIX = 'session:';

/** The credential a level belongs to: each key, OAuth grant or session keeps its own. */
function credentialKey({ credential }: Principal): string {
  if (credential.type === 'api_key') return `api_key:${credential.apiKeyId}`;
  if (credential.type === 'oauth') return `oauth:${credential.grantId}`;
  return `${SESSION_PREFIX}${credential.sessionId}`;
}

export async function logLevelOf(db: GlobalDb, principal: Principal): Promise<LoggingLevel | undefined> {
  const [row] = await db
    .select({ level: mcpLogLevels.level })
    .from(mcpLogLevels)
    .where(eq(mcpLogLevels.credential, credentialKey(principal)))
    .limit(1);
  return row?.level;
}

/** `logging/setLevel`: remembered for the credential, since no session outlives the request. */
export function handleSetLevel(server: McpServer, db: GlobalDb, principal: Principal): void {
  server.server.setRequestHandler('logging/setLevel', async ({ params: { level } }) => {
    const values = { credential: credentialKey(principal), level, updatedAt: now() };
    await db
      .insert(mcpLogLevels)
      .values(values)
      .onConflictDoUpdate({ target: mcpLogLevels.credential, set: { level, updatedAt: values.updatedAt } });
    return {};
  });
}

/**
 * Housekeeping: deletes the levels of sessions that ended (signed out, expired and deleted, or
 * gone with their account); a session's level would otherwise be kept for ever, since its id is
 * never used again.
 */
export async function deleteEndedSessionLogLevels(db: GlobalDb): Promise<void> {
  const sessionId = sql`substr(${mcpLogLevels.credential}, ${SESSION_PREFIX.length + 1})`;
  await db
    .delete(mcpLogLevels)
    .where(
      and(like(mcpLogLevels.credential, `${SESSION_PREFIX}%`), notExists(db.select({ id: sessions.id }).from(sessions).where(eq(sessions.id, sessionId)))),
    );
}
