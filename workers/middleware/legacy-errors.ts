import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../env';
import { AppError, retryAfterHeader } from '../errors';

/**
 * Spec 7.1: the run, rerun and remix routes carry the service's own code in
 * `details.serviceCode`; spec 7.3: POST /skills/:slug/run alone answers in the older flat
 * shape, `{error: '<CODE>', message, ...detail fields}`. Put after authentication: auth and
 * rate-limit rejections keep the standard envelope. Hono's onError has already answered when
 * this sees the error, so it rewrites that answer.
 */
const runErrors = (shape: 'flat' | 'envelope') =>
  createMiddleware<AppEnv>(async (c, next) => {
    await next();
    const error = c.error;
    if (!(error instanceof AppError)) return;
    const details = { ...error.details, serviceCode: error.code };
    c.res = undefined;
    c.res =
      shape === 'flat'
        ? c.json({ ...error.extra, ...error.details, error: error.code, message: error.message, details }, error.status, retryAfterHeader(error))
        : c.json({ ...error.extra, error: { code: error.code, message: error.message, details } }, error.status, retryAfterHeader(error));
  });

export const legacyFlatErrors = runErrors('flat');
export const serviceCodeErrors = runErrors('envelope');
