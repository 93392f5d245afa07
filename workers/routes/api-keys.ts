import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { CursorQuery } from '../lib/pagination';
import { principalOf } from '../middleware/authenticate';
import { idempotent } from '../middleware/idempotency';
import { validate } from '../middleware/validate';
import { ApiKeyRecord, createApiKey, CreateApiKeyBody, CreatedApiKey, listApiKeys, revokeApiKey } from '../services/api-keys';
import { cursorEnvelope, documented } from './openapi';

const KeyParam = z.object({ id: z.string().min(1).max(40) });

export const apiKeysRoutes = new Hono<AppEnv>()
  .get(
    '/',
    documented('API keys', "The caller's keys in this workspace (never the key itself)", 200, cursorEnvelope(ApiKeyRecord)),
    validate('query', CursorQuery),
    async (c) => c.json(await listApiKeys(c.var.db, principalOf(c), c.req.valid('query'))),
  )
  .post(
    '/',
    documented('API keys', 'Create a key bound to this workspace; `key` is shown only here', 201, CreatedApiKey),
    idempotent,
    validate('json', CreateApiKeyBody),
    async (c) => c.json(await createApiKey(c.var.db, principalOf(c), c.req.valid('json')), 201),
  )
  .post('/:id/revoke', documented('API keys', 'Revoke a key; it fails from its next request on', 200, ApiKeyRecord), validate('param', KeyParam), async (c) =>
    c.json(await revokeApiKey(c.var.db, c.env.CREDENTIAL_GATE, principalOf(c), c.req.valid('param').id)),
  );
