import { eq, sql } from 'drizzle-orm';
import { z } from 'zod';
import { memory } from '../../schema';
import type { Principal } from '../auth/principal';
import type { Db } from '../env';
import { invalidInput } from '../errors';
import { now, toIso } from '../lib/clock';
import { isConstraintFailure } from '../lib/db-errors';
import { recordChange } from './audit';
import { batchOnce } from './run-tool-calls';

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
    db
      .insert(memory)
      .values(values)
      .onConflictDoUpdate({
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

/** Spec 2.4: appended entries are separated by a blank line, three hyphens, a blank line. */
export const MEMORY_SEPARATOR = '\n\n---\n\n';

export const AppendMemoryBody = z.object({ content: z.string().min(1).max(MAX_MEMORY_CHARS) });

/**
 * Appends an entry in one statement (an upsert that concatenates in SQL), so concurrent
 * appends never overwrite each other, unlike read-modify-write. An append that would grow the
 * document past MAX_MEMORY_CHARS yields NULL for the NOT NULL column: the statement fails and
 * with it the whole batch, so no audit entry records an append that did not happen. A run's tool
 * call (`toolCallKey`) appends once: made again, its batch fails on the call's key and the
 * document is answered as it is.
 */
export async function appendMemory(db: Db, principal: Principal, entry: string, toolCallKey?: string): Promise<MemoryDocument> {
  const t = now();
  try {
    const answer = await batchOnce(
      db,
      [
        db
          .insert(memory)
          .values({ workspaceId: principal.workspaceId, content: entry, updatedBy: principal.userId, updatedAt: t })
          .onConflictDoUpdate({
            target: memory.workspaceId,
            set: {
              content: sql`CASE
              WHEN length(${memory.content}) + ${MEMORY_SEPARATOR.length} + length(excluded.content) > ${MAX_MEMORY_CHARS} THEN NULL
              WHEN ${memory.content} = '' THEN excluded.content
              ELSE ${memory.content} || ${MEMORY_SEPARATOR} || excluded.content END`,
              updatedBy: principal.userId,
              updatedAt: t,
            },
          })
          .returning(),
        ...recordChange(db, principal, {
          action: 'memory.appended',
          resourceType: 'memory',
          resourceId: principal.workspaceId,
          metadata: { length: entry.length },
          activity: 'Working memory was appended to',
        }),
      ],
      toolCallKey,
    );
    if (!answer) return readMemory(db, principal);
    const [[row]] = answer;
    return { content: row!.content, updatedAt: toIso(row!.updatedAt) };
  } catch (error) {
    if (isConstraintFailure(error, 'NOT NULL', 'memory.content')) {
      throw invalidInput('content', 'too_big', `Working memory would exceed ${MAX_MEMORY_CHARS} characters`);
    }
    throw error;
  }
}
