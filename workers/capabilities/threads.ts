import { z } from 'zod';
import { CursorQuery, cursorEnvelope } from '../lib/pagination';
import {
  createThread,
  CreateThreadBody,
  listMessages,
  listThreads,
  PostedMessage,
  postMessage,
  PostMessageBody,
  Thread,
  ThreadMessage,
} from '../services/threads';
import { defineCapability, READ_ONLY, WRITE, type Area } from './capability';

const ThreadId = z.object({ threadId: z.string().min(1).max(64).describe('The thread id') });
const byId = { id: 'threadId' };

/** Chat threads answered by an installed skill. */
export const threadsArea: Area = {
  mount: '/api/v1/threads',
  tag: 'Threads',
  capabilities: [
    defineCapability({
      name: 'create-thread',
      title: 'Start a chat thread',
      description: 'Starts a chat thread answered by an installed skill (and its chat trace).',
      access: { auth: 'credential', scope: 'thread:write' },
      input: CreateThreadBody,
      output: Thread,
      annotations: WRITE,
      http: { method: 'POST', path: '/', status: 201, summary: 'Start a chat thread answered by an installed skill (and its chat trace)' },
      mcp: false,
      run: (ctx, body) => createThread(ctx.db, ctx.globalDb, ctx.actor, body),
    }),
    defineCapability({
      name: 'list-threads',
      title: 'List threads',
      description: 'Threads of the workspace, newest first.',
      access: { auth: 'credential', scope: 'thread:read' },
      input: CursorQuery,
      output: cursorEnvelope(Thread),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/' },
      mcp: false,
      run: (ctx, query) => listThreads(ctx.db, ctx.actor, query),
    }),
    defineCapability({
      name: 'post-thread-message',
      title: 'Post a message',
      description: 'Posts a message: runs one agent turn and stores the exchange (the reply once the turn ends).',
      access: { auth: 'credential', scope: 'thread:write' },
      input: ThreadId.extend(PostMessageBody.shape),
      output: PostedMessage,
      annotations: { ...WRITE, openWorldHint: true },
      http: {
        method: 'POST',
        path: '/:id/messages',
        params: byId,
        status: 201,
        summary: 'Post a message: runs one agent turn and stores the exchange (the reply once the turn ends)',
      },
      mcp: false,
      run: (ctx, { threadId, ...body }) => postMessage(ctx.db, ctx.env, ctx.actor, threadId, body),
    }),
    defineCapability({
      name: 'list-thread-messages',
      title: 'List messages',
      description: 'The conversation, oldest first.',
      access: { auth: 'credential', scope: 'thread:read' },
      input: ThreadId.extend(CursorQuery.shape),
      output: cursorEnvelope(ThreadMessage),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:id/messages', params: byId },
      mcp: false,
      run: (ctx, { threadId, ...query }) => listMessages(ctx.db, ctx.actor, threadId, query),
    }),
  ],
};
