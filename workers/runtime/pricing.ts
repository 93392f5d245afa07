import { ANTHROPIC_DEFAULT_MODEL } from './providers/anthropic';
import { LOCAL_MODEL } from './providers/local';
import { OPENAI_DEFAULT_MODEL } from './providers/openai';

export interface Price {
  /** Ds per million input tokens (at most two decimals). */
  input: number;
  /** Ds per million output tokens (at most two decimals). */
  output: number;
}

/**
 * Ds per million tokens, at list price (1 Ds = 1 US cent, so $3/M is 300 Ds/M). A dated snapshot
 * (`gpt-4o-mini-2024-07-18`) is priced as the longest entry it starts with. The local model is
 * priced like a small hosted model, so runs on the default exercise the whole ledger path.
 */
export const PRICES: Readonly<Record<string, Price>> = {
  [ANTHROPIC_DEFAULT_MODEL]: { input: 300, output: 1500 },
  'claude-sonnet-4-6': { input: 300, output: 1500 },
  'claude-sonnet-4-5': { input: 300, output: 1500 },
  'claude-haiku-4-5': { input: 100, output: 500 },
  [OPENAI_DEFAULT_MODEL]: { input: 15, output: 60 },
  'gpt-4o': { input: 250, output: 1000 },
  'gpt-4.1': { input: 200, output: 800 },
  'gpt-4.1-mini': { input: 40, output: 160 },
  [LOCAL_MODEL]: { input: 25, output: 125 },
};

/** Any other model (a self-hosted one, a new release): priced like a mid-size hosted model. */
export const FALLBACK_PRICE: Price = { input: 300, output: 1500 };

export function priceOf(model: string): Price {
  const exact = PRICES[model];
  if (exact) return exact;
  const family = Object.keys(PRICES)
    .filter((name) => model.startsWith(`${name}-`))
    .sort((a, b) => b.length - a.length)[0];
  return family ? PRICES[family]! : FALLBACK_PRICE;
}

/**
 * Cost in hundredths of a Ds at a model's price (or the price itself, looked up once by a caller
 * that asks often), rounded up to 0.01 Ds. Computed in integers, Ds/M × 100 × tokens over 10^6,
 * so no float error can round a whole cost up by 0.01.
 */
export function costInHundredths(model: string | Price, inputTokens: number, outputTokens: number): number {
  const price = typeof model === 'string' ? priceOf(model) : model;
  const scaled = inputTokens * Math.round(price.input * 100) + outputTokens * Math.round(price.output * 100);
  return Math.ceil(scaled / 1_000_000);
}
