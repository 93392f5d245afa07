import type { LoggingLevel, McpServer } from '@modelcontextprotocol/server';
import { eq } from 'drizzle-orm';
import { mcpLogLevels } from '../../schema';
import type { Principal } from '../auth/principal';
import type { GlobalDb } from '../env';
import { now } from '../lib/clock';

/** The credential a level belongs to: each key, OAuth grant or session keeps its own. */
function credentialKey({ credential }: Principal): string {
  if (credential.type === 'api_key') return `api_key:${credential.apiKeyId}`;
  if (credential.type === 'oauth') return `oauth:${credential.grantId}`;
  return `session:${credential.sessionId}`;
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
