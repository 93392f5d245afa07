import { describe, expect, inject, it } from 'vitest';
import { AppError } from '../../workers/errors';
import { costInHundredths, FALLBACK_PRICE, PRICES, priceOf } from '../../workers/runtime/pricing';
import { AnthropicProvider } from '../../workers/runtime/providers/anthropic';
import { DEFAULT_MODELS, selectProvider } from '../../workers/runtime/providers/index';
import { LocalProvider } from '../../workers/runtime/providers/local';
import { OpenAIProvider } from '../../workers/runtime/providers/openai';
import { collect, firstTurn } from './model-requests';

const configError = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return { code: (error as AppError).code, status: (error as AppError).status, message: (error as AppError).message, details: (error as AppError).details };
  }
  throw new Error('expected a configuration error');
};

describe('selectProvider', () => {
  it('prefers an Anthropic key, then an OpenAI key, else local, each with its default model', () => {
    const both = selectProvider({ ANTHROPIC_API_KEY: 'a', OPENAI_API_KEY: 'o' });
    expect(both).toBeInstanceOf(AnthropicProvider);
    expect(both.model).toBe(DEFAULT_MODELS.anthropic);
    expect(selectProvider({ OPENAI_API_KEY: 'o' })).toMatchObject({ name: 'openai', model: 'gpt-4o-mini' });
    expect(selectProvider({})).toMatchObject({ name: 'local', model: 'local-1' });
    // Blank values (an empty wrangler var) count as unset.
    expect(selectProvider({ ANTHROPIC_API_KEY: '  ', OPENAI_API_KEY: '' })).toBeInstanceOf(LocalProvider);
    expect(DEFAULT_MODELS.anthropic).toMatch(/^claude-sonnet-/);
  });

  it('lets an explicit MODEL_PROVIDER win, and names the missing key when it has none', () => {
    expect(selectProvider({ MODEL_PROVIDER: 'openai', ANTHROPIC_API_KEY: 'a', OPENAI_API_KEY: 'o' })).toBeInstanceOf(OpenAIProvider);
    expect(selectProvider({ MODEL_PROVIDER: 'local', ANTHROPIC_API_KEY: 'a' })).toBeInstanceOf(LocalProvider);
    expect(selectProvider({ MODEL_PROVIDER: 'Anthropic', ANTHROPIC_API_KEY: 'a', MODEL: 'claude-haiku-4-5' }).model).toBe('claude-haiku-4-5');
    expect(configError(() => selectProvider({ MODEL_PROVIDER: 'anthropic', OPENAI_API_KEY: 'o' }))).toEqual({
      code: 'SERVICE_UNAVAILABLE',
      status: 503,
      message: 'MODEL_PROVIDER is anthropic but ANTHROPIC_API_KEY is not set',
      details: { setting: 'ANTHROPIC_API_KEY' },
    });
    expect(configError(() => selectProvider({ MODEL_PROVIDER: 'openai' })).details).toEqual({ setting: 'OPENAI_API_KEY' });
    expect(configError(() => selectProvider({ MODEL_PROVIDER: 'gemini' })).details).toEqual({ setting: 'MODEL_PROVIDER' });
    expect(configError(() => selectProvider({ MODEL_PROVIDER: 'constructor' })).details).toEqual({ setting: 'MODEL_PROVIDER' });
    expect(configError(() => selectProvider({ OPENAI_API_KEY: 'o', OPENAI_BASE_URL: 'ftp://x' })).details).toEqual({ setting: 'OPENAI_BASE_URL' });
  });

  it('applies MODEL to the configured provider only; local always runs local-1 at LOCAL_MODEL_DELAY_MS', () => {
    expect(selectProvider({ OPENAI_API_KEY: 'o', MODEL: 'llama-3.1-8b' }).model).toBe('llama-3.1-8b');
    expect(selectProvider({ MODEL: 'claude-haiku-4-5' }).model).toBe('local-1');
    expect(selectProvider({ LOCAL_MODEL_DELAY_MS: '40' })).toEqual(new LocalProvider(40));
    expect(selectProvider({ LOCAL_MODEL_DELAY_MS: 'soon' })).toEqual(new LocalProvider(0));
  });

  it('uses a BYOK key in place of the service key, for its own provider and the configured base URL', async () => {
    const origin = inject('fixtureOrigin');
    const keys = inject('modelKeys');
    const byok = selectProvider(
      { ANTHROPIC_API_KEY: 'service-key', OPENAI_BASE_URL: `${origin}/model/openai/text` },
      { provider: 'openai', apiKey: keys.openai },
    );
    expect(byok).toMatchObject({ name: 'openai', model: 'gpt-4o-mini' });
    expect((await collect(byok, firstTurn(byok.model))).at(-1)).toEqual({ type: 'stop', reason: 'end_turn' });

    // Without any service key, BYOK still works; MODEL set for the same provider still applies.
    const own = selectProvider(
      { MODEL_PROVIDER: 'anthropic', MODEL: 'claude-sonnet-5', ANTHROPIC_BASE_URL: `${origin}/model/anthropic/text` },
      { provider: 'anthropic', apiKey: keys.anthropic },
    );
    expect((await collect(own, firstTurn(own.model))).at(-1)).toEqual({ type: 'stop', reason: 'end_turn' });
  });
});

describe('pricing', () => {
  it('prices every default model, local-1 like a small hosted model, and unknown models at the fallback', () => {
    for (const model of Object.values(DEFAULT_MODELS)) expect(PRICES[model]).toBeDefined();
    expect(PRICES['local-1']).toEqual({ input: 25, output: 125 });
    expect(PRICES['claude-sonnet-5']).toEqual({ input: 300, output: 1500 });
    expect(priceOf('my-self-hosted-model')).toBe(FALLBACK_PRICE);
    // A dated snapshot is priced as its family, the longest matching name.
    expect(priceOf('gpt-4o-mini-2024-07-18')).toBe(PRICES['gpt-4o-mini']);
    expect(priceOf('gpt-4o-2024-08-06')).toBe(PRICES['gpt-4o']);
  });

  it('returns integer hundredths of a Ds, rounded up', () => {
    // 1M input tokens of local-1 is exactly 25 Ds.
    expect(costInHundredths('local-1', 1_000_000, 0)).toBe(2500);
    // 1 token costs 0.000025 Ds: still 0.01 Ds.
    expect(costInHundredths('local-1', 1, 0)).toBe(1);
    expect(costInHundredths('local-1', 0, 0)).toBe(0);
    // 400 in + 80 out = 0.01 + 0.01 Ds exactly: no float error may push it to 3.
    expect(costInHundredths('local-1', 400, 80)).toBe(2);
    expect(costInHundredths('local-1', 401, 80)).toBe(3);
    // claude-sonnet-5: 1234 × 300 + 567 × 1500 = 1,220,700 Ds/M·tokens → 1.2207 Ds → 123 hundredths.
    expect(costInHundredths('claude-sonnet-5', 1234, 567)).toBe(123);
    // gpt-4o-mini: 10,000 × 15 + 1,000 × 60 = 210,000 → 0.21 Ds exactly.
    expect(costInHundredths('gpt-4o-mini', 10_000, 1_000)).toBe(21);
    for (let tokens = 0; tokens < 2000; tokens += 37) expect(Number.isInteger(costInHundredths('claude-haiku-4-5', tokens, tokens))).toBe(true);
  });
});
