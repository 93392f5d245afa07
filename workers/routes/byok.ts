import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { principalOf } from '../auth/principal';
import { validate } from '../middleware/validate';
import { ByokStatus, deleteByok, getByok, putByok, PutByokBody } from '../services/byok';
import { documented } from './openapi';

/** The caller's own model-provider key (spec 4.9 BYOK): write-only, shown masked. */
export const byokRoutes = new Hono<AppEnv>()
  .get('/', documented('BYOK', 'Whether the caller has a key, its masked preview and provider', 200, ByokStatus), async (c) =>
    c.json(await getByok(c.var.db, principalOf(c))),
  )
  .put(
    '/',
    documented('BYOK', 'Store the caller’s key (sk-ant-: Anthropic, other sk-: OpenAI-compatible), encrypted at rest', 200, ByokStatus),
    validate('json', PutByokBody),
    async (c) => c.json(await putByok(c.var.db, principalOf(c), c.env.ENCRYPTION_KEY, c.req.valid('json'))),
  )
  .delete(
    '/',
    documented('BYOK', 'Remove the caller’s key; runs go back to the service’s provider and credits', 200, ByokStatus.pick({ hasKey: true, keyPreview: true })),
    async (c) => c.json(await deleteByok(c.var.db, principalOf(c))),
  );
