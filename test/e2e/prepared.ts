import { inject } from 'vitest';
import { startService, type StartOptions } from './helpers';

/**
 * `wrangler dev` on a copy of the state `npm start` prepared once for the suite
 * (./global-setup.ts), with the same printed key: for files that test the service, not `npm start`.
 */
export const startPrepared = (timeoutMs?: number, options: Omit<StartOptions, 'restart' | 'from'> = {}) =>
  startService(timeoutMs, { ...options, from: inject('preparedState') });
