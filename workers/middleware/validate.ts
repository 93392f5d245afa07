import { zValidator } from '@hono/zod-validator';
import { createMiddleware } from 'hono/factory';
import type { ValidationTargets } from 'hono';
import { resolver, uniqueSymbol } from 'hono-openapi';
import type { z } from 'zod';
import { invalidInput } from '../errors';

const fieldOf = (target: keyof ValidationTargets, path: PropertyKey[]) =>
  path.length ? path.map(String).join('.') : target === 'json' ? 'body' : target;

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
  return Object.assign(middleware, { [uniqueSymbol]: { target, ...resolver(schema) } });
}

/**
 * For routes whose JSON body is optional (spec 4.2 install: "no body is legitimate"): an empty
 * body reads as `{}` even when sent with a JSON content type.
 */
export const optionalJsonBody = createMiddleware(async (c, next) => {
  // HonoRequest.json() parses its cached text, so an empty body is cached as the text `{}`.
  // The cache holds promises at run time; Hono types its entries as plain values.
  if ((await c.req.text()).trim() === '') (c.req.bodyCache as { text?: Promise<string> }).text = Promise.resolve('{}');
  await next();
});
