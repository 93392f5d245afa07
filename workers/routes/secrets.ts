import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { CursorQuery } from '../lib/pagination';
import { principalOf } from '../middleware/authenticate';
import { idempotent } from '../middleware/idempotency';
import { validate } from '../middleware/validate';
import { createSecret, CreateSecretBody, deleteSecret, listSecrets, PatchSecretBody, SecretRecord, updateSecret } from '../services/secrets';
import { cursorEnvelope, documented } from './openapi';

const IdParam = z.object({ id: z.string().min(1).max(40) });
const Deleted = z.object({ success: z.literal(true) });

/** Workspace secrets (spec 4.5). Values are write-only: no response ever carries one. */
export const secretsRoutes = new Hono<AppEnv>()
  .get(
    '/',
    documented('Secrets', 'Secrets of the workspace, newest first (never their values)', 200, cursorEnvelope(SecretRecord)),
    validate('query', CursorQuery),
    async (c) => c.json(await listSecrets(c.var.db, principalOf(c), c.req.valid('query'))),
  )
  .post('/', documented('Secrets', 'Store a secret, encrypted at rest', 201, SecretRecord), idempotent, validate('json', CreateSecretBody), async (c) =>
    c.json(await createSecret(c.var.db, principalOf(c), c.env.ENCRYPTION_KEY, c.req.valid('json')), 201),
  )
  .patch(
    '/:id',
    documented('Secrets', 'Rename and/or rotate the value', 200, SecretRecord),
    validate('param', IdParam),
    validate('json', PatchSecretBody),
    async (c) => c.json(await updateSecret(c.var.db, principalOf(c), c.env.ENCRYPTION_KEY, c.req.valid('param').id, c.req.valid('json'))),
  )
  .delete('/:id', documented('Secrets', 'Delete the secret and its skill bindings', 200, Deleted), validate('param', IdParam), async (c) =>
    c.json(await deleteSecret(c.var.db, principalOf(c), c.req.valid('param').id)),
  );
