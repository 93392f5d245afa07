import { LOCAL_MODEL } from './providers/local';

/**
 * Ds per million tokens (1 Ds = 1 US cent at list price, so $3/M is 300 Ds/M). The local
 * model is priced like a small hosted model, so runs on the default exercise the cost path.
 */
export const PRICES: Record<string, { input: number; output: number }> = {
  [LOCAL_MODEL]: { input: 25, output: 125 },
};
const FALLBACK = { input: 300, output: 1500 };

/** Cost in hundredths of a Ds, rounded up (DECISIONS.md: rounded up to 0.01 Ds). */
export function costInHundredths(model: string, inputTokens: number, outputTokens: number): number {
  const price = PRICES[model] ?? FALLBACK;
  return Math.ceil(((inputTokens * price.input + outputTokens * price.output) * 100) / 1_000_000);
}
