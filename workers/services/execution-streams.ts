import { executions } from '../../schema';
import type { Principal } from '../auth/principal';
import type { Db } from '../env';
import { formatId } from '../lib/ids';
import { signStreamToken } from '../lib/signing';
import { requireOwned } from './tenant';

/** Stream URLs are short-lived: fetch a fresh one to reconnect. */
export const STREAM_TOKEN_TTL_MS = 5 * 60_000;

/** The path of an execution's SSE stream; the signed token in its query is the credential. */
export const streamPath = (executionId: number) => `/streams/executions/${formatId('exec', executionId)}`;

/** GET /executions/:id/stream-token: a signed URL for the caller's own execution. */
export async function createStreamUrl(db: Db, principal: Principal, rawId: string, origin: string, secret: string) {
  const row = await requireOwned(db, executions, principal, 'exec', rawId, 'Execution');
  const token = await signStreamToken(
    secret,
    'execution-stream',
    { subject: formatId('exec', row.id), workspaceId: principal.workspaceId },
    STREAM_TOKEN_TTL_MS,
  );
  return { sseUrl: `${origin}${streamPath(row.id)}?token=${encodeURIComponent(token)}` };
}
