import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { principalOf } from '../auth/principal';
import { validate } from '../middleware/validate';
import { BindSecretBody, bindSecret, listBindings, SecretBinding, unbindSecret } from '../services/skill-secrets';
import { SkillSlug } from '../services/skills';
import { documented } from './openapi';

const SlugParam = z.object({ slug: SkillSlug });
const BindingParam = SlugParam.extend({ id: z.string().min(1).max(20) });

/**
 * Secrets handed to a skill's runs as environment variables (spec 4.2). Mounted at
 * `/api/v1/skills/:slug/secrets`: Hono hands the mount path's `:slug` to these handlers.
 */
export const skillSecretsRoutes = new Hono<AppEnv>()
  .get('/', documented('Skills', "The skill's secret bindings, oldest first", 200, z.array(SecretBinding)), validate('param', SlugParam), async (c) =>
    c.json(await listBindings(c.var.db, principalOf(c), c.req.valid('param').slug)),
  )
  .post(
    '/',
    documented('Skills', 'Bind a secret to an environment variable of the skill', 201, SecretBinding),
    validate('param', SlugParam),
    validate('json', BindSecretBody),
    async (c) => c.json(await bindSecret(c.var.db, principalOf(c), c.req.valid('param').slug, c.req.valid('json')), 201),
  )
  .delete('/:id', documented('Skills', 'Remove a binding', 200, z.object({ success: z.literal(true) })), validate('param', BindingParam), async (c) => {
    const { slug, id } = c.req.valid('param');
    return c.json(await unbindSecret(c.var.db, principalOf(c), slug, id));
  });
