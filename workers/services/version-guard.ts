import { z } from 'zod';
import { GUARD_STATUSES, type SkillVersionGuardRow } from '../../schema';
import { toIso } from '../lib/clock';
import { formatId } from '../lib/ids';

/** A version the guard held back when it was written, as the version list, the skill and the write show it. */
export const VersionGuard = z.object({
  version: z.number().int().describe('The version held back'),
  status: z
    .enum(GUARD_STATUSES)
    .describe('evaluating until its eval ends; then accepted (it became current), refused (it stays non-current), or overridden by the owner'),
  evalId: z.string().describe('The eval measuring it, on the cases of the version it would replace'),
  baselineEvalId: z.string().describe('The eval of that previous version it is compared with (same cases, same model)'),
  previousVersion: z.number().int().describe('The version current when it was written'),
  passRate: z.number().nullable().describe('Its pass rate with the skill, once its eval ended'),
  required: z.number().nullable().describe('The previous version’s pass rate with the skill: the least it must score'),
  note: z.string().nullable().describe('Why it was refused, or that the owner overrode it'),
  decidedAt: z.string().nullable(),
});
export type VersionGuard = z.infer<typeof VersionGuard>;

export const presentGuard = (row: SkillVersionGuardRow, versionNumber: number): VersionGuard => ({
  version: versionNumber,
  status: row.status,
  evalId: formatId('eval', row.evalId),
  baselineEvalId: formatId('eval', row.baselineEvalId),
  previousVersion: row.previousVersionNumber,
  passRate: row.passRate,
  required: row.required,
  note: row.note,
  decidedAt: row.decidedAt === null ? null : toIso(row.decidedAt),
});

/** A version still held back: being evaluated, or refused and not overridden. */
export const HELD: readonly SkillVersionGuardRow['status'][] = ['evaluating', 'refused'];
