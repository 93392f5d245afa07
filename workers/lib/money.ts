import { z } from 'zod';

/**
 * Amounts of credits: stored and computed as integers of hundredths of a Ds (docs/billing.md),
 * shown and taken in Ds.
 */
export const ds = (hundredths: number) => hundredths / 100;
export const hundredthsOf = (credits: number) => Math.round(credits * 100);

/** A positive amount of Ds with at most two decimals. */
export const Credits = z
  .number()
  .positive()
  .max(1e9)
  .refine((v) => Math.abs(v * 100 - Math.round(v * 100)) < 1e-6, 'at most two decimals (hundredths of a Ds)');
