import { and, desc, eq } from 'drizzle-orm';
import { z } from 'zod';
import { executions, threadMessages, threads, traces, type ThreadMessageRow, type ThreadRow } from '../../schema';
import type { Principal } from '../auth/principal';
import type { Env, GlobalDb, ShardDb } from '../env';
import { globalDbOf } from '../lib/db';
import { invalidInput, notFound } from '../errors';
import { now, sleep, toIso } from '../lib/clock';
import { formatId, parseId, parseUuidCursor, uuidv7 } from '../lib/ids';
import { cursorPage, CursorQuery, mapPage } from '../lib/pagination';
import { recordChange } from './audit';
import { createExecution, getExecutionStatus, postEvents } from './executions';
import { requireSkill } from './skills';
import { traceExecutionRemoved, traceUpsert } from './traces';

/** How long posting a message waits for the agent's turn to end before answering without the reply. */
const REPLY_WAIT_MS = 120_000;
const REPLY_POLL_MS = 50;
/** Earlier messages handed to the agent with a new one. */
const CONTEXT_MESSAGES = 10;
const CONTEXT_CHARS = 8_000;

export const CreateThreadBody = z.object({
  skill_slug: z.string().min(1).max(64),
  title: z.string().trim().min(1).max(200).optional(),
});
export type CreateThreadBody = z.infer<typeof CreateThreadBody>;

export const Thread = z.object({
  id: z.string(),
  title: z.string(),
  skillSlug: z.string(),
  traceId: z.string(),
  traceKey: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Thread = z.infer<typeof Thread>;

export const ThreadMessage = z.object({
  id: z.number().int(),
  threadId: z.string(),
  role: z.enum(['user', 'assistant']),
  content: z.string(),
  executionId: z.string().nullable(),
  createdAt: z.string(),
});

const presentThread = (row: ThreadRow, traceId: string): Thread => ({
  id: row.id,
  title: row.title,
  skillSlug: row.skillSlug,
  traceId,
  traceKey: row.traceKey,
  createdAt: toIso(row.createdAt),
  updatedAt: toIso(row.updatedAt),
});

const presentMessage = (row: ThreadMessageRow) => ({
  id: row.id,
  threadId: row.threadId,
  role: row.role,
  content: row.content,
  executionId: row.executionId === null ? null : formatId('exec', row.executionId),
  createdAt: toIso(row.createdAt),
});

const withTrace = (db: ShardDb) =>
  db
    .select({ thread: threads, traceId: traces.id })
    .from(threads)
    .innerJoin(traces, and(eq(traces.workspaceId, threads.workspaceId), eq(traces.traceKey, threads.traceKey)));

async function requireThread(db: ShardDb, principal: Principal, id: string) {
  const [row] = await withTrace(db)
    .where(and(eq(threads.workspaceId, principal.workspaceId), eq(threads.id, id)))
    .limit(1);
  if (!row) throw notFound('Thread');
  return row;
}

/** A thread answered by an installed skill, with its chat trace. */
export async function createThread(db: ShardDb, globalDb: GlobalDb, principal: Principal, body: CreateThreadBody): Promise<Thread> {
  const skill = await requireSkill(db, globalDb, principal, body.skill_slug);
  const at = now();
  const id = uuidv7();
  const traceKey = crypto.randomUUID();
  const title = body.title ?? `Chat with ${skill.slug}`;
  await db.batch([
    db
      .insert(threads)
      .values({ id, workspaceId: principal.workspaceId, title, skillSlug: skill.slug, traceKey, createdBy: principal.userId, createdAt: at, updatedAt: at }),
    traceUpsert(db, principal, { traceKey, kind: 'chat', title, executionId: null, threadId: id }),
    ...recordChange(db, principal, {
      action: 'thread.created',
      resourceType: 'thread',
      resourceId: id,
      metadata: { skill: skill.slug },
      activity: `A chat thread "${title}" was started`,
    }),
  ]);
  const created = await requireThread(db, principal, id);
  return presentThread(created.thread, created.traceId);
}

/** Newest first (ids are UUIDv7). */
export async function listThreads(db: ShardDb, principal: Principal, query: CursorQuery) {
  const page = await cursorPage(
    query,
    {
      column: threads.id,
      parseCursor: parseUuidCursor,
      fetch: (where, orderBy, limit) =>
        withTrace(db)
          .where(and(eq(threads.workspaceId, principal.workspaceId), where))
          .orderBy(orderBy)
          .limit(limit),
      publicId: (row) => row.thread.id,
    },
    undefined,
  );
  return mapPage(page, (row) => presentThread(row.thread, row.traceId));
}

/** Oldest first, the order of the conversation. */
export async function listMessages(db: ShardDb, principal: Principal, threadId: string, query: CursorQuery) {
  const { thread } = await requireThread(db, principal, threadId);
  const page = await cursorPage(
    query,
    {
      column: threadMessages.id,
      order: 'asc',
      parseCursor: (raw) => (/^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : null),
      fetch: (where, orderBy, limit) =>
        db
          .select()
          .from(threadMessages)
          .where(and(eq(threadMessages.threadId, thread.id), where))
          .orderBy(orderBy)
          .limit(limit),
      publicId: (row) => String(row.id),
    },
    undefined,
  );
  return mapPage(page, presentMessage);
}

export const PostMessageBody = z.object({
  content: z.string().trim().min(1).max(100_000),
  /** The thread's trace key, as a trace's `continue` names it; anything else is refused. */
  sessionId: z.string().min(1).max(100).optional(),
});
export type PostMessageBody = z.infer<typeof PostMessageBody>;

/** The agent sees the recent conversation before the new message. */
async function withContext(db: ShardDb, threadId: string, content: string) {
  const recent = (
    await db.select().from(threadMessages).where(eq(threadMessages.threadId, threadId)).orderBy(desc(threadMessages.id)).limit(CONTEXT_MESSAGES)
  ).reverse();
  if (recent.length === 0) return content;
  const transcript = recent
    .map((m) => `${m.role === 'user' ? 'User' : 'Assistant'}: ${m.content}`)
    .join('\n\n')
    .slice(-CONTEXT_CHARS);
  return `Conversation so far:\n\n${transcript}\n\nUser: ${content}`;
}

/**
 * One exchange: the message starts a run of the thread's skill in the thread's lineage (so it
 * lands on the chat trace), the message is stored, and once the turn ends (within
 * REPLY_WAIT_MS) the agent's answer is stored as the reply.
 */
export async function postMessage(db: ShardDb, env: Env, principal: Principal, threadId: string, body: PostMessageBody) {
  const { thread } = await requireThread(db, principal, threadId);
  if (body.sessionId !== undefined && body.sessionId !== thread.traceKey)
    throw invalidInput('sessionId', 'trace_key', "sessionId is not this thread's trace key");
  const text = await withContext(db, thread.id, body.content);
  const idle = await createExecution(db, globalDbOf(env), principal, {
    skill_slug: thread.skillSlug,
    input: text,
    source: 'chat',
    interface: 'chat',
    sessionId: thread.traceKey,
  });
  const executionId = parseId('exec', idle.id)!;
  try {
    await postEvents(db, env, principal, idle.id, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] });
  } catch (error) {
    await db.delete(executions).where(eq(executions.id, executionId));
    await traceExecutionRemoved(db, principal.workspaceId, thread.traceKey);
    throw error;
  }
  const [message] = await db.batch([
    db.insert(threadMessages).values({ threadId: thread.id, role: 'user', content: body.content, executionId, createdAt: now() }).returning(),
    db.update(threads).set({ updatedAt: now() }).where(eq(threads.id, thread.id)),
    ...recordChange(db, principal, { action: 'thread.message_posted', resourceType: 'thread', resourceId: thread.id, metadata: { executionId: idle.id } }),
  ]);

  const status = await settled(db, executionId);
  let reply: ThreadMessageRow | null = null;
  if (status === 'completed') {
    const blocks = (await getExecutionStatus(db, env, principal, idle.id)).outputBlocks;
    const [row] = await db
      .insert(threadMessages)
      .values({ threadId: thread.id, role: 'assistant', content: blocks.at(-1)?.text ?? '', executionId, createdAt: now() })
      .returning();
    reply = row!;
  }
  return { message: presentMessage(message[0]!), reply: reply && presentMessage(reply), executionId: idle.id, status };
}

/** Waits for the run to leave `working`; answers its status then (still `working` after the wait). */
async function settled(db: ShardDb, executionId: number): Promise<string> {
  const deadline = now() + REPLY_WAIT_MS;
  for (;;) {
    const [row] = await db.select({ status: executions.status }).from(executions).where(eq(executions.id, executionId)).limit(1);
    if (!row || row.status !== 'working' || now() > deadline) return row?.status ?? 'failed';
    await sleep(REPLY_POLL_MS);
  }
}

export const PostedMessage = z.object({ message: ThreadMessage, reply: ThreadMessage.nullable(), executionId: z.string(), status: z.string() });
