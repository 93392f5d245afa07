import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { memory } from '../../schema';
import type { Principal } from '../auth/principal';
import type { Db } from '../env';
import { now, toIso } from '../lib/clock';
import { recordChange } from './audit';

/** Largest memory document, in characters: well inside a D1 row and the request body cap. */
export const MAX_MEMORY_CHARS = 512 * 1024;

export const PutMemoryBody = z.object({ content: z.string().max(MAX_MEMORY_CHARS) });
export type PutMemoryBody = z.infer<typeof PutMemoryBody>;

export const MemoryDocument = z.object({ content: z.string(), updatedAt: z.string().nullable() });
export type MemoryDocument = z.infer<typeof MemoryDocument>;

export async function readMemory(db: Db, principal: Principal): Promise<MemoryDocument> {
  const [row] = await db.select().from(memory).where(eq(memory.workspaceId, principal.workspaceId)).limit(1);
  return { content: row?.content ?? '', updatedAt: row ? toIso(row.updatedAt) : null };
}

/** Full replace (spec 4.6). */
export async function writeMemory(db: Db, principal: Principal, input: PutMemoryBody): Promise<MemoryDocument> {
  const t = now();
  const values = { workspaceId: principal.workspaceId, content: input.content, updatedBy: principal.userId, updatedAt: t };
  await db.batch([
    db.insert(memory).values(values).onConflictDoUpdate({
      target: memory.workspaceId,
      set: { content: values.content, updatedBy: values.updatedBy, updatedAt: t },
    }),
    ...recordChange(db, principal, {
      action: 'memory.updated',
      resourceType: 'memory',
      resourceId: principal.workspaceId,
      metadata: { length: input.content.length },
      activity: 'Working memory was updated',
    }),
  ]);
  return { content: input.content, updatedAt: toIso(t) };
}
