import { Cron } from 'croner';

/**
 * When a workflow schedule fires (docs/workflows.md, Schedules): its cron expression read in its
 * time zone by croner, and which fire time an alarm that rings at a given moment handles. Pure:
 * every moment is passed in (ms on the service clock).
 */

/** Fire times a schedule's answer lists. */
export const LISTED_FIRE_TIMES = 5;
/** A fire time less than this far past when its alarm rings is on time; older ones were missed (the object was down). */
export const ON_TIME_MS = 60_000;
/** Fire times counted as covered by one fire at most (a long outage of a frequent schedule is not walked whole). */
const MAX_COUNTED = 1_000;
const MAX_CRON_LENGTH = 120;
const MAX_TIMEZONE_LENGTH = 64;

export interface CronSetting {
  cron: string;
  timezone: string;
}

/**
 * Five fields (minute, hour, day of month, month, day of week) or a nickname (`@daily`), so the
 * shortest interval is a minute. Day of month and day of week together match either, as in Vixie cron.
 */
const cronOf = ({ cron, timezone }: CronSetting) => new Cron(cron, { timezone, mode: '5-part', paused: true });

/** Why a cron expression or time zone cannot be used, as the 400 names it; null when they can. */
export function cronProblem(setting: CronSetting): { field: 'cron' | 'timezone'; rule: string; message: string } | null {
  if (setting.timezone.length > MAX_TIMEZONE_LENGTH)
    return { field: 'timezone', rule: 'timezone', message: `timezone: at most ${MAX_TIMEZONE_LENGTH} characters` };
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: setting.timezone });
  } catch {
    return { field: 'timezone', rule: 'timezone', message: `timezone: unknown time zone "${setting.timezone}" (an IANA name such as Europe/Paris, or UTC)` };
  }
  if (setting.cron.length > MAX_CRON_LENGTH) return { field: 'cron', rule: 'cron', message: `cron: at most ${MAX_CRON_LENGTH} characters` };
  const fields = setting.cron.trim().split(/\s+/).length;
  if (!setting.cron.trim().startsWith('@') && fields !== 5) {
    return {
      field: 'cron',
      rule: 'cron',
      message: `cron: five fields are needed (minute hour day-of-month month day-of-week), not ${fields}, or a nickname such as @daily`,
    };
  }
  let cron: Cron;
  try {
    cron = cronOf(setting);
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/^CronPattern: /, '') : String(error);
    return { field: 'cron', rule: 'cron', message: `cron: ${reason} (five fields: minute hour day-of-month month day-of-week)` };
  }
  if (cron.nextRun(new Date(0)) === null) return { field: 'cron', rule: 'never_fires', message: `cron: "${setting.cron}" matches no date` };
  return null;
}

/** The next `n` fire times after `after`. */
export const nextFireTimes = (setting: CronSetting, after: number, n = LISTED_FIRE_TIMES): number[] =>
  cronOf(setting)
    .nextRuns(n, new Date(after))
    .map((d) => d.getTime());

/** The first fire time after `after`, or null if none is left. */
export const nextFireTime = (setting: CronSetting, after: number): number | null => nextFireTimes(setting, after, 1)[0] ?? null;

/**
 * What an alarm ringing at `now` does: the fire times after `anchor` (the last one handled, or
 * when the schedule began or its cron changed) up to `now` come due together and are handled as
 * one, at the latest of them. That one is on time if it came while the schedule was active
 * (after `resumedAt`) and less than ON_TIME_MS ago; otherwise they were all missed, and
 * `catchUp` says whether they get one run (`catch_up`) or none (`missed`). `covered`: how many
 * fire times the handling stands for. Null: none is due.
 */
export type DueFire = { fireTime: number; kind: 'on_time' | 'catch_up' | 'missed'; covered: number };

export function dueFire(setting: CronSetting & { catchUp: 'skip' | 'run_once' }, at: { anchor: number; resumedAt: number; now: number }): DueFire | null {
  const cron = cronOf(setting);
  let next = cron.nextRun(new Date(at.anchor));
  if (next === null || next.getTime() > at.now) return null;
  let latest = next.getTime();
  let covered = 0;
  while (next !== null && next.getTime() <= at.now && covered < MAX_COUNTED) {
    latest = next.getTime();
    covered++;
    next = cron.nextRun(next);
  }
  // Past the count, the latest is found from `now` backwards (a run exactly at `now` included).
  if (covered === MAX_COUNTED) latest = cron.previousRuns(1, new Date(at.now + 1))[0]!.getTime();
  const onTime = latest > at.resumedAt && at.now - latest < ON_TIME_MS;
  return { fireTime: latest, kind: onTime ? 'on_time' : setting.catchUp === 'run_once' ? 'catch_up' : 'missed', covered };
}
