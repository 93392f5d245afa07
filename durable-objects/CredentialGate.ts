import { DurableObject } from 'cloudflare:workers';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { globalDbOf } from '../workers/lib/db';
import type { Actor } from '../workers/auth/actor';
import { resolveCredential, type HashedCredential, type Resolution } from '../workers/auth/credentials';
import { heldNow, type Held } from '../workers/auth/launcher';
import type { GlobalDb, Env } from '../workers/env';
import { AppError, type ErrorCode, type ErrorDetails } from '../workers/errors';
import { now } from '../workers/lib/clock';
import { HitCounter, type RateDecision } from './RateLimiter';

/** Where the gate remembers what a launching credential holds in a workspace. */
function launcherKey({ credential, workspaceId }: Pick<Actor, 'credential' | 'workspaceId'>): string {
  const id = credential.type === 'api_key' ? credential.apiKeyId : credential.type === 'session' ? credential.sessionId : credential.grantId;
  return `launcher:${credential.type}:${id}:${workspaceId}`;
}

/** The storage key prefix of a watched workflow run (`watchRun`). */
const WATCHED_RUN = 'run:';
/** A resolution is trusted this long at most, even if no change was announced. */
const RECORD_MAX_AGE_MS = 60_000;
/** Past this many remembered resolutions the object starts over (each one reloads from D1 once). */
const MAX_RECORDS = 256;

export interface GateRequest {
  credential: HashedCredential;
  allowUnactivated: boolean;
  /** Resources an access token may be for here (RFC 8707); the first is the service's own, which a token naming none is for. */
  audiences: string[];
  limit: number;
  windowMs: number;
  /** Requests this one counts for: the calls of an MCP batch (default 1). */
  weight?: number;
}

/**
 * A refused credential: the AppError it was (errors do not cross RPC as their class), or the
 * resource an access token was issued for when presented elsewhere.
 */
export type Refusal = { code: ErrorCode; status: ContentfulStatusCode; message: string; details?: ErrorDetails } | { wrongAudience: string };

export type GateAnswer = { ok: true; principal: Resolution['principal']; decision: RateDecision } | { ok: false; refusal: Refusal };

type Outcome = ({ ok: true; principal: Resolution['principal'] } | { ok: false; refusal: Refusal }) & { until: number };

/**
 * One instance per user, by name: the user id. Answers in one call, for one of the user's
 * credentials (by hash), who is calling, whether the credential admits them, and how many
 * requests are left: the API rate-limit counters of the user's keys (`key:<id>`) and of the user
 * (`user:`, shared by their sessions and access tokens) live here.
 *
 * D1 stays the system of record. A credential's resolution (its principal or its refusal) is
 * loaded from D1 on first use and remembered in memory, keyed by the credential's hash, until it
 * expires, for at most a minute, or until `forget`: every change to the user's credentials,
 * memberships or workspaces calls it after writing D1, so the next request reads D1 again.
 *
 * Storage: the counters, synchronous KV `<subject>:window` and `<subject>:count`, so the count
 * survives eviction, and `run:<runId>` for each unfinished workflow run the user launched
 * (`watchRun`), which `forget` tells. Nothing secret is held: hashes, ids, scopes.
 */
export class CredentialGate extends DurableObject<Env> {
  private readonly db: GlobalDb = globalDbOf(this.env);
  private readonly counter = new HitCounter(this.ctx.storage.kv);
  /** Resolutions by credential, and launchers' holds by credential and workspace, as promises so concurrent first requests share one D1 read. */
  private readonly records = new Map<string, Promise<{ until: number }>>();
  /** Counts `forget`s: a load that began before one puts nothing back. */
  private generation = 0;

  async admit(request: GateRequest): Promise<GateAnswer> {
    const outcome = await this.resolve(request.credential, request.allowUnactivated);
    if (!outcome.ok) return { ok: false, refusal: outcome.refusal };
    const { principal } = outcome;
    if (principal.credential.type === 'oauth') {
      const audience = principal.credential.resource ?? request.audiences[0]!;
      if (!request.audiences.includes(audience)) {
        return { ok: false, refusal: { wrongAudience: audience } };
      }
    }
    const subject = principal.credential.type === 'api_key' ? `key:${principal.credential.apiKeyId}:` : 'user:';
    return { ok: true, principal, decision: this.counter.hit(subject, request.limit, request.windowMs, request.weight) };
  }

  /**
   * What a run's launching credential (one of this user's) holds now in the run's workspace, for
   * each tool call and workflow step the run makes: remembered like a resolution, so a run's
   * steps do not each read D1, and forgotten with them on any change.
   */
  async launcher(actor: Actor): Promise<Held> {
    const outcome = await this.remembered(launcherKey(actor), async () => {
      const held = await heldNow(this.db, actor);
      return { ok: true, held, until: Math.min(now() + RECORD_MAX_AGE_MS, held.until ?? Infinity) } as const;
    });
    return outcome.held;
  }

  /**
   * Drops every remembered resolution. A load already under way is dropped with the map, so it
   * cannot put back what it read before the change. The user's unfinished workflow runs are then
   * told (by the alarm, which tries again until each has heard), so one that sleeps or waits for
   * input fails now if its launcher no longer holds, instead of when it wakes.
   */
  async forget(): Promise<void> {
    this.generation++;
    this.records.clear();
    if (this.watchedRuns().length > 0) await this.ctx.storage.setAlarm(Date.now());
  }

  /** A workflow run launched by one of this user's credentials, until it ends: `forget` tells it. */
  watchRun(runId: string): void {
    this.ctx.storage.kv.put(`${WATCHED_RUN}${runId}`, true);
  }

  unwatchRun(runId: string): void {
    this.ctx.storage.kv.delete(`${WATCHED_RUN}${runId}`);
  }

  /** Tells each watched run that its launcher may have changed; a run that has ended is watched no more. */
  override async alarm(): Promise<void> {
    const told = await Promise.allSettled(
      this.watchedRuns().map(async (runId) => {
        if ((await this.env.WORKFLOW_RUN.getByName(runId).launcherChanged()) === 'ended') this.unwatchRun(runId);
      }),
    );
    // A run not reached is told again by the alarm's retry.
    const failed = told.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private watchedRuns(): string[] {
    return [...this.ctx.storage.kv.list({ prefix: WATCHED_RUN })].map(([key]) => key.slice(WATCHED_RUN.length));
  }

  private resolve(credential: HashedCredential, allowUnactivated: boolean): Promise<Outcome> {
    return this.remembered(`${credential.kind}:${credential.hash}:${credential.selector ?? ''}:${allowUnactivated}`, () =>
      this.load(credential, allowUnactivated),
    );
  }

  /** The remembered answer under `key` while it holds, else `load`'s, remembered in its place. */
  private async remembered<T extends { until: number }>(key: string, load: () => Promise<T>): Promise<T> {
    const remembered = this.records.get(key) as Promise<T> | undefined;
    if (remembered) {
      const outcome = await remembered;
      if (outcome.until > now()) return outcome;
      if (this.records.get(key) === remembered) this.records.delete(key);
    }
    if (this.records.size >= MAX_RECORDS) this.records.clear();
    const loading = load();
    this.records.set(key, loading);
    // A failed read (not a refusal) is not remembered.
    loading.catch(() => this.records.get(key) === loading && this.records.delete(key));
    return loading;
  }

  private async load(credential: HashedCredential, allowUnactivated: boolean): Promise<Outcome> {
    const maxUntil = now() + RECORD_MAX_AGE_MS;
    const generation = this.generation;
    try {
      const { principal, expiresAt } = await resolveCredential(this.db, credential, { allowUnactivated });
      const until = Math.min(maxUntil, expiresAt ?? maxUntil);
      // What the credential holds in its workspace is what a run it launches there checks at each
      // tool call (`launcher`): known from this read, so a run's first call reads nothing more.
      // Not from a read that admits unactivated keys (a launcher must be active), nor from one a
      // change overtook (`forget`): what it read must not come back.
      if (!allowUnactivated && generation === this.generation) {
        this.records.set(launcherKey(principal), Promise.resolve({ ok: true, held: { role: principal.role, scopes: principal.scopes }, until }));
      }
      return { ok: true, principal, until };
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return { ok: false, refusal: { code: error.code, status: error.status, message: error.message, details: error.details }, until: maxUntil };
    }
  }
}
