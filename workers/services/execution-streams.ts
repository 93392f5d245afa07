import type { Principal } from '../auth/principal';
import type { ShardDb, Env } from '../env';
import { currentExecution } from './execution-reconciler';
import { formatId } from '../lib/ids';
import { signStreamToken } from '../lib/signing';
import { streamHolderOf } from '../lib/stream-slots';

/** Stream URLs are short-lived: fetch a fresh one to reconnect. */
export const STREAM_TOKEN_TTL_MS = 5 * 60_000;

/** The path of an execution's SSE stream; the signed token in its query is the credential. */
export const streamPath = (executionId: number) => `/streams/executions/${formatId('exec', executionId)}`;

/** GET /executions/:id/stream-token: a signed URL for the caller's own execution, relative to the service's origin. */
export async function createStreamUrl(db: ShardDb, env: Env, principal: Principal, rawId: string) {
  // A run lost to a crash is settled first, so the stream ends instead of waiting for it.
  const row = await currentExecution(db, env, principal, rawId);
  const token = await signStreamToken(
    env.SIGNING_SECRET,
    'execution-stream',
    { subject: formatId('exec', row.id), workspaceId: principal.workspaceId, holder: streamHolderOf(principal) },
    STREAM_TOKEN_TTL_MS,
  );
  return { sseUrl: `${streamPath(row.id)}?token=${encodeURIComponent(token)}` };
}
