import { and, eq } from 'drizzle-orm';
import { skills, type SkillRow } from '../../schema';
import type { Principal } from '../auth/principal';
import type { Db } from '../env';
import { notFound } from '../errors';

/** The skill installed (or authored) in the caller's workspace under `slug`, or 404. */
export async function requireSkill(db: Db, principal: Principal, slug: string): Promise<SkillRow> {
  const [row] = await db
    .select()
    .from(skills)
    .where(and(eq(skills.workspaceId, principal.workspaceId), eq(skills.slug, slug)))
    .limit(1);
  if (!row) throw notFound(`Skill "${slug}"`);
  return row;
}
