import { zValidator } from '@hono/zod-validator';
import { createMiddleware } from 'hono/factory';
import type { Context, ValidationTargets } from 'hono';
import { resolver, uniqueSymbol } from 'hono-openapi';
import type { z } from 'zod';
import { invalidInput } from '../errors';

export const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;

/** Requests whose empty body optionalJsonBody reads as `{}`: they sent no body to mistype. */
const emptyBodies = new WeakSet<Request>();

/**
 * Hono's json validator reads a body sent under any other content type as `{}`, so a body whose
 * every field is optional (narrowed consent scopes, launch inputs) would be silently ignored and
 * the request carried out with defaults. A non-empty body must say it is JSON.
 */
async function assertJsonMediaType(c: Context): Promise<void> {
  const mediaType = (c.req.header('content-type') ?? '').split(';')[0]!.trim();
  if (!JSON_MEDIA_TYPE.test(mediaType) && !emptyBodies.has(c.req.raw) && (await c.req.text()).trim() !== '') {
    throw invalidInput('content-type', 'media_type', 'Send the body as application/json');
  }
}

const fieldOf = (target: keyof ValidationTargets, path: PropertyKey[]) => (path.length ? path.map(String).join('.') : target === 'json' ? 'body' : target);

/**
 * zod validation at the edge (@hono/zod-validator) whose failures become 400 INVALID_INPUT
 * with `details: {field, rule}` (the first problem) and `issues` (all of them). The schema is
 * also registered with hono-openapi, so the OpenAPI document is generated from the very
 * schemas that validate requests.
 */
export function validate<Target extends keyof ValidationTargets, Schema extends z.ZodType>(target: Target, schema: Schema) {
  const middleware = zValidator(target, schema, (result) => {
    if (result.success) return;
    const issues = result.error.issues.map((issue) => ({
      field: fieldOf(target, issue.path),
      rule: issue.code,
      message: issue.message,
    }));
    const first = issues[0]!;
    throw invalidInput(first.field, first.rule, `Invalid ${first.field}: ${first.message}`, { issues });
  });
  const checked: typeof middleware =
    target === 'json'
      ? async (c, next) => {
          await assertJsonMediaType(c);
          return middleware(c, next);
        }
      : middleware;
  return Object.assign(checked, { [uniqueSymbol]: { target, ...resolver(schema) } });
}

/**
 * For routes whose JSON body is optional (spec 4.2 install: "no body is legitimate"): an empty
 * body reads as `{}` even when sent with a JSON content type.
 */
export const optionalJsonBody = createMiddleware(async (c, next) => {
  // HonoRequest.json() parses its cached text, so an empty body is cached as the text `{}`.
  // The cache holds promises at run time; Hono types its entries as plain values.
  if ((await c.req.text()).trim() === '') {
    (c.req.bodyCache as { text?: Promise<string> }).text = Promise.resolve('{}');
    emptyBodies.add(c.req.raw);
  }
  await next();
});
