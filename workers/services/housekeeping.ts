import { maintainSigningKeys } from '../auth/oauth/signing-keys';
import type { Env } from '../env';
import { boundShards, globalDbOf, shardDbOf } from '../lib/db';
import { deleteEndedSessionLogLevels } from '../mcp/logging';
import { deleteExpiredIdempotencyRecords } from '../middleware/idempotency';
import { deleteExpiredSessions } from './accounts';
import { deliverAllChanges } from './audit';
import { deleteExpiredActivations } from './device-activation';
import { reconcileStale, releaseOrphanedHolds } from './execution-reconciler';
import { deleteExpiredOAuthRecords } from './oauth';
import { deleteEndedOAuthGrants } from './oauth-grants';
import { expireRetainedData } from './retention-sweep';
import { maintainExports } from './workspace-exports';
import { deleteExpiredToolCalls } from './run-tool-calls';
import { forgetPastSpend } from './spend-limits';
import { resumeStaleAccountDeletions } from './account-erasure';
import { resumeStaleDeletions } from './workspace-erasure';
import { resendWebhookEvents } from './webhook-events';

/** Logs a housekeeping task that failed; the others go on, and the next hour tries again. */
const logged = (task: string) => (error: unknown) =>
  console.error(JSON.stringify({ level: 'error', message: 'a housekeeping task failed', task, error: String(error) }));

/**
 * The hourly housekeeping (wrangler.toml [triggers]): on the global database, expired sessions
 * and the MCP log levels of sessions that ended (mcp/logging.ts), activations and OAuth records,
 * OAuth grants a month after they ended (oauth-grants.ts), the signing keys' rotation and the
 * change outbox's delivery;
 * on every shard, expired idempotency records and run tool calls, and the run reconciler's
 * sweep of claims a crash left `working`, so no workspace stays locked, and the data past its
 * workspace's retention window (retention-sweep.ts), spend counts of past months and days
 * (spend-limits.ts), workspace exports to start again or delete (workspace-exports.ts), and
 * webhook events whose emitter did not get them onto the queue (webhook-events.ts); and
 * the credit holds whose claim is gone, so no user's credits stay held; and workspace deletions
 * and account deletions that stalled are driven again (workspace-erasure.ts, account-erasure.ts).
 */
export function housekeeping(env: Env): Promise<unknown> {
  const db = globalDbOf(env);
  return Promise.all([
    // A session's MCP log level goes once its session is gone, this hour's expired ones included.
    deleteExpiredSessions(db)
      .then(() => deleteEndedSessionLogLevels(db))
      .catch(logged('sessions')),
    deleteExpiredActivations(db).catch(logged('device activations')),
    deleteExpiredOAuthRecords(db).catch(logged('oauth records')),
    deleteEndedOAuthGrants(db).catch(logged('oauth grants')),
    maintainSigningKeys(db, env.ENCRYPTION_KEY).catch(logged('signing keys')),
    deliverAllChanges(db, env).catch(logged('change outbox')),
    releaseOrphanedHolds(env).catch(logged('orphaned holds')),
    resumeStaleDeletions(env).catch(logged('workspace deletions')),
    resumeStaleAccountDeletions(env).catch(logged('account deletions')),
    ...boundShards(env).map((shard) => {
      const shardDb = shardDbOf(env, shard);
      return Promise.all([
        deleteExpiredIdempotencyRecords(shardDb).catch(logged(`idempotency records, shard ${shard}`)),
        deleteExpiredToolCalls(shardDb).catch(logged(`run tool calls, shard ${shard}`)),
        reconcileStale(shardDb, env).catch(logged(`run reconciler, shard ${shard}`)),
        expireRetainedData(env, db, shardDb).catch(logged(`retention, shard ${shard}`)),
        forgetPastSpend(shardDb).catch(logged(`past spend counts, shard ${shard}`)),
        maintainExports(env, shardDb).catch(logged(`workspace exports, shard ${shard}`)),
        resendWebhookEvents(shardDb, env, shard).catch(logged(`webhook outbox, shard ${shard}`)),
      ]);
    }),
  ]);
}
