import { eq, sql } from 'drizzle-orm';
import { selectOnce } from '../lib/select-once';
import { z } from 'zod';
import { memory } from '../../schema';
import type { Principal } from '../auth/principal';
import type { ShardDb } from '../env';
import { invalidInput } from '../errors';
import { now, toIso } from '../lib/clock';
import { isConstraintFailure } from '../lib/db-errors';
import { recordChange } from './audit';
import { batchOnce } from './run-tool-calls';

/**
 * Largest memory document, in UTF-8 bytes (what D1 stores), separators included: well inside a
 * D1 row and the request body cap. A write and an append measure it the same way.
 */
export const MAX_MEMORY_BYTES = 512 * 1024;

const encoder = new TextEncoder();
const utf8Bytes = (text: string) => encoder.encode(text).byteLength;

/** What a write or an append past MAX_MEMORY_BYTES answers. */
const tooBig = () => invalidInput('content', 'too_big', `Working memory would exceed ${MAX_MEMORY_BYTES} bytes (UTF-8)`, { limit: MAX_MEMORY_BYTES });

export const MemoryDocument = z.object({ content: z.string(), updatedAt: z.string().nullable() });
export type MemoryDocument = z.infer<typeof MemoryDocument>;

/** The workspace's document: every keyed read runs it, so its SQL is built once (workers/lib/select-once.ts). */
const memoryOf = selectOnce((qb) =>
  qb
    .select({ content: memory.content, updatedAt: memory.updatedAt })
    .from(memory)
    .where(eq(memory.workspaceId, sql.placeholder('workspaceId')))
    .limit(1),
);

export async function readMemory(db: ShardDb, principal: Principal): Promise<MemoryDocument> {
  const [row] = await memoryOf(db, { workspaceId: principal.workspaceId });
  return { content: row?.content ?? '', updatedAt: row ? toIso(row.updatedAt) : null };
}

/** Full replace (spec 4.6). */
export async function writeMemory(db: ShardDb, principal: Principal, input: Pick<MemoryDocument, 'content'>): Promise<MemoryDocument> {
  if (utf8Bytes(input.content) > MAX_MEMORY_BYTES) throw tooBig();
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

const SEPARATOR_BYTES = utf8Bytes(MEMORY_SEPARATOR);

/**
 * Appends an entry in one statement (an upsert that concatenates in SQL), so concurrent
 * appends never overwrite each other, unlike read-modify-write. An append that would grow the
 * document past MAX_MEMORY_BYTES (measured in SQL as the UTF-8 bytes of the stored text, as a
 * write measures its content) yields NULL for the NOT NULL column: the statement fails and
 * with it the whole batch, so no audit entry records an append that did not happen. A run's tool
 * call (`toolCallKey`) appends once: made again, its batch fails on the call's key and the
 * document is answered as it is.
 */
export async function appendMemory(db: ShardDb, principal: Principal, entry: string, toolCallKey?: string): Promise<MemoryDocument> {
  // The first entry of an empty workspace is inserted as it is, unmeasured by the statement.
  if (utf8Bytes(entry) > MAX_MEMORY_BYTES) throw tooBig();
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
              WHEN length(CAST(${memory.content} AS BLOB)) + ${SEPARATOR_BYTES} + length(CAST(excluded.content AS BLOB)) > ${MAX_MEMORY_BYTES} THEN NULL
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
      throw tooBig();
    }
    throw error;
  }
}
