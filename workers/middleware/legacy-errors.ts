import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../env';
import { AppError } from '../errors';

/**
 * Spec 7.3: POST /skills/:slug/run answers its own failures in the older flat shape,
 * `{error: '<CODE>', message, ...detail fields}`, and carries the code in
 * `details.serviceCode` (spec 7.1). Put after authentication: auth and rate-limit rejections
 * keep the standard envelope. Hono's onError has already answered when this sees the error,
 * so it rewrites that answer.
 */
export const legacyFlatErrors = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  const error = c.error;
  if (!(error instanceof AppError)) return;
  const details = { ...error.details, serviceCode: error.code };
  c.res = undefined;
  c.res = c.json({ ...error.extra, ...error.details, error: error.code, message: error.message, details }, error.status);
});
