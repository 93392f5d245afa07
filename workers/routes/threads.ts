import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { CursorQuery } from '../lib/pagination';
import { principalOf } from '../middleware/authenticate';
import { validate } from '../middleware/validate';
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
import { cursorEnvelope, documented } from './openapi';

const IdParam = z.object({ id: z.string().min(1).max(64) });

export const threadsRoutes = new Hono<AppEnv>()
  .post(
    '/',
    documented('Threads', 'Start a chat thread answered by an installed skill (and its chat trace)', 201, Thread),
    validate('json', CreateThreadBody),
    async (c) => c.json(await createThread(c.var.db, principalOf(c), c.req.valid('json')), 201),
  )
  .get('/', documented('Threads', 'Threads of the workspace, newest first', 200, cursorEnvelope(Thread)), validate('query', CursorQuery), async (c) =>
    c.json(await listThreads(c.var.db, principalOf(c), c.req.valid('query'))),
  )
  .post(
    '/:id/messages',
    documented('Threads', 'Post a message: runs one agent turn and stores the exchange (the reply once the turn ends)', 201, PostedMessage),
    validate('param', IdParam),
    validate('json', PostMessageBody),
    async (c) => c.json(await postMessage(c.var.db, c.env, principalOf(c), c.req.valid('param').id, c.req.valid('json')), 201),
  )
  .get(
    '/:id/messages',
    documented('Threads', 'The conversation, oldest first', 200, cursorEnvelope(ThreadMessage)),
    validate('param', IdParam),
    validate('query', CursorQuery),
    async (c) => c.json(await listMessages(c.var.db, principalOf(c), c.req.valid('param').id, c.req.valid('query'))),
  );
