import { DurableObject } from 'cloudflare:workers';
import type { ScheduleFire, WorkflowScheduleRow } from '../schema/shard/workflows';
import type { Actor } from '../workers/auth/actor';
import type { Env, ShardDb } from '../workers/env';
import { now } from '../workers/lib/clock';
import { directoryRoutedShardDb } from '../workers/services/directory-routed';
import { launchFire, readSchedule, recordFire, ScheduleStopped, stopSchedule, unfinishedRuns } from '../workers/services/schedule-firing';
import { dueFire, nextFireTime, type CronSetting } from '../workers/workflows/schedule-times';

/** Which schedule this object is, and where its row lives. */
export interface ScheduleIdentity {
  scheduleId: string;
  workspaceId: string;
  shard: number;
}

/** A schedule's cron and whether it fires now (its row's state is `active`). */
export type ScheduleTiming = CronSetting & { active: boolean };

/** A fire time taken in hand: recorded before its run is launched, cleared once the launch is. */
interface Handling {
  fireTime: number;
  /** How many fire times the run stands for (more than one for a catch-up). */
  covered: number;
}

/**
 * While a fire waits behind a run (overlap `queue_one`), the run's end wakes this object
 * (`runEnded`); the alarm looks this often anyway, in case that word never came (the run's
 * object cut off before it could send it).
 */
const QUEUE_FALLBACK_MS = 10 * 60_000;
/** A fire that failed for a reason that may pass (D1, the run's object) is tried again after this. */
const RETRY_MS = 30_000;
/** Runs remembered as maybe unfinished, at most (overlap `allow` may start many that run long). */
const MAX_TRACKED_RUNS = 100;

/**
 * One per workflow schedule, addressed by the schedule's id: its alarm rings at the next fire
 * time. The row (D1 `workflow_schedules`) holds the settings and is read at every alarm; this
 * object holds what firing needs besides (kv): its identity, the credential its runs act for
 * (`actor`), `anchor` (the last fire time handled, or when the schedule began or its cron
 * changed: later fire times are due), `resumedAt` (fire times up to it came while paused),
 * `handling` (a fire time being launched), `queued` (a fire time waiting for a run to end) and
 * `runs` (the runs it started that may not have finished).
 *
 * Exactly once per fire time: `anchor` and `handling` move together, in one storage change,
 * before the launch; the launch's run id is derived from (schedule, fire time), so an alarm that
 * finds `handling` still set (the object stopped after launching, before recording it) launches
 * again and finds the same run already started. Fire times that came due together, while paused
 * or while the alarm was late, are handled as one (workers/workflows/schedule-times.ts).
 */
export class WorkflowSchedule extends DurableObject<Env> {
  /** Whether the alarm is at work, and whether a run ended meanwhile (after it read which runs are unfinished, maybe). */
  private firing = false;
  private endedWhileFiring = false;

  private get kv() {
    return this.ctx.storage.kv;
  }

  /** A new schedule: who it is and acts for; fire times after now are due. */
  async begin(identity: ScheduleIdentity, actor: Actor, timing: ScheduleTiming): Promise<void> {
    const t = now();
    this.ctx.storage.transactionSync(() => {
      this.kv.put('identity', identity);
      this.kv.put('actor', actor);
      this.kv.put('anchor', t);
      this.kv.put('resumedAt', t);
    });
    await this.arm(timing);
  }

  /** Its cron or time zone changed: the old one's fire times are gone, and the new one's due from now. */
  async reset(timing: ScheduleTiming): Promise<void> {
    if (!this.kv.get('identity')) return;
    this.kv.put('anchor', now());
    await this.arm(timing);
  }

  /** Set going again (from paused or stopped) by `actor`, whose credential its runs act for from now on; fire times missed meanwhile are handled at once. */
  async resume(actor: Actor): Promise<void> {
    if (!this.kv.get('identity')) return;
    this.ctx.storage.transactionSync(() => {
      this.kv.put('actor', actor);
      this.kv.put('resumedAt', now());
    });
    await this.ctx.storage.setAlarm(Date.now());
  }

  /**
   * A run it started has ended, as D1 shows (its WorkflowRun object says so): a fire waiting
   * behind it starts now. Said while the alarm is at work, the alarm rings again at once.
   */
  async runEnded(): Promise<void> {
    if (this.firing) {
      this.endedWhileFiring = true;
      return;
    }
    if (this.kv.get('queued') === undefined) return;
    await this.ctx.storage.setAlarm(Date.now());
  }

  /** The schedule was deleted (or its workspace): nothing is left of this object. */
  async erase(): Promise<void> {
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
  }

  override async alarm(): Promise<void> {
    this.firing = true;
    this.endedWhileFiring = false;
    try {
      await this.ring();
    } finally {
      this.firing = false;
    }
  }

  private async ring(): Promise<void> {
    const identity = this.kv.get<ScheduleIdentity>('identity');
    if (!identity) return;
    const db = directoryRoutedShardDb(this.env, identity.workspaceId, identity.shard);
    const row = await readSchedule(db, identity.scheduleId);
    if (!row) return this.erase();
    try {
      await this.fire(db, row);
    } catch (error) {
      if (error instanceof ScheduleStopped) {
        this.ctx.storage.transactionSync(() => {
          this.kv.delete('handling');
          this.kv.delete('queued');
        });
        await stopSchedule(db, row, this.kv.get<Actor>('actor')!, error.message);
        return this.ctx.storage.deleteAlarm();
      }
      console.error(JSON.stringify({ level: 'error', scheduleId: identity.scheduleId, error: String(error) }));
      return this.ctx.storage.setAlarm(Date.now() + RETRY_MS);
    }
    await this.arm({ ...row, active: row.state === 'active' });
  }

  /** Everything due now: a launch cut off, a queued fire whose turn came, then the fire times come due. */
  private async fire(db: ShardDb, row: WorkflowScheduleRow) {
    // A fire time taken in hand while active is carried through even if the schedule was paused since.
    const handling = this.kv.get<Handling>('handling');
    if (handling) await this.launch(db, row, handling);
    if (row.state !== 'active') {
      // Paused or stopped: a fire time waiting behind a run goes with the fires it stands for.
      this.kv.delete('queued');
      return;
    }
    const running = await unfinishedRuns(db, row.workspaceId, this.kv.get<string[]>('runs') ?? []);
    this.kv.put('runs', running);
    const queued = this.kv.get<number>('queued');
    if (queued !== undefined && running.length === 0) {
      this.ctx.storage.transactionSync(() => {
        this.kv.delete('queued');
        this.kv.put('handling', { fireTime: queued, covered: 1 } satisfies Handling);
      });
      await this.launch(db, row, { fireTime: queued, covered: 1 });
    }
    const due = dueFire(row, { anchor: this.kv.get<number>('anchor')!, resumedAt: this.kv.get<number>('resumedAt')!, now: now() });
    if (!due) return;
    const { fireTime, covered } = due;
    if (due.kind === 'missed') return this.settle(db, row, fireTime, { fireTime, outcome: 'missed', reason: `${covered} fire time(s) missed` });
    const busy = (this.kv.get<string[]>('runs') ?? []).length > 0;
    if (busy && row.overlap === 'skip') return this.settle(db, row, fireTime, { fireTime, outcome: 'skipped', reason: 'overlap' });
    if (busy && row.overlap === 'queue_one') {
      if (this.kv.get<number>('queued') !== undefined) return this.settle(db, row, fireTime, { fireTime, outcome: 'skipped', reason: 'queue_full' });
      return this.settle(db, row, fireTime, { fireTime, outcome: 'queued' }, fireTime);
    }
    this.ctx.storage.transactionSync(() => {
      this.kv.put('anchor', fireTime);
      this.kv.put('handling', { fireTime, covered } satisfies Handling);
    });
    await this.launch(db, row, { fireTime, covered });
  }

  /** A fire time handled without a launch: the anchor moves past it (and it may wait as `queued`), then the row says what became of it. */
  private async settle(db: ShardDb, row: WorkflowScheduleRow, fireTime: number, fire: ScheduleFire, queue?: number) {
    this.ctx.storage.transactionSync(() => {
      this.kv.put('anchor', fireTime);
      if (queue !== undefined) this.kv.put('queued', queue);
    });
    await recordFire(db, row.id, fire);
  }

  /** Launches the run of the fire time in hand, then records it: `handling` cleared and the run remembered. */
  private async launch(db: ShardDb, row: WorkflowScheduleRow, handling: Handling) {
    const runId = await launchFire(db, this.env, row, this.kv.get<Actor>('actor')!, handling.fireTime);
    this.ctx.storage.transactionSync(() => {
      this.kv.delete('handling');
      this.kv.put('runs', [...(this.kv.get<string[]>('runs') ?? []), runId].slice(-MAX_TRACKED_RUNS));
    });
    const fire: ScheduleFire = { fireTime: handling.fireTime, outcome: 'started', runId };
    await recordFire(db, row.id, handling.covered > 1 ? { ...fire, reason: `covers ${handling.covered} fire times` } : fire);
  }

  /**
   * The alarm at the next fire time; while a fire waits for a run to end, at once if a run ended
   * while the alarm was at work, else no later than the fallback; none while not active.
   */
  private async arm(timing: ScheduleTiming) {
    if (!timing.active) return this.ctx.storage.deleteAlarm();
    const t = now();
    const waiting = this.kv.get<number>('queued') === undefined ? null : this.endedWhileFiring ? t : t + QUEUE_FALLBACK_MS;
    const candidates = [nextFireTime(timing, t), waiting].filter((c) => c !== null);
    if (candidates.length === 0) return this.ctx.storage.deleteAlarm();
    // Fire times are on the service clock; alarms run on the real one.
    await this.ctx.storage.setAlarm(Date.now() + Math.max(0, Math.min(...candidates) - t));
  }
}
