import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { principalOf } from '../middleware/authenticate';
import { validate } from '../middleware/validate';
import { MemoryDocument, PutMemoryBody, readMemory, writeMemory } from '../services/memory';
import { documented } from './openapi';

export const memoryRoutes = new Hono<AppEnv>()
  .get('/', documented('Memory', "The workspace's working-memory document", 200, MemoryDocument), async (c) =>
    c.json(await readMemory(c.var.db, principalOf(c))),
  )
  .put('/', documented('Memory', 'Replace the whole document', 200, MemoryDocument), validate('json', PutMemoryBody), async (c) =>
    c.json(await writeMemory(c.var.db, principalOf(c), c.req.valid('json'))),
  );
