import type { Env } from '../../env';
import { AppError } from '../../errors';
import type { ByokKey } from '../../services/byok';
import type { ModelProvider, ProviderName } from '../provider';
import { ANTHROPIC_DEFAULT_MODEL, AnthropicProvider } from './anthropic';
import { LOCAL_MODEL, LocalProvider } from './local';
import type { HostedOptions } from './http';
import { OPENAI_DEFAULT_MODEL, OpenAIProvider } from './openai';

export { LOCAL_PROVIDER_NOTICE } from './local';

/** The settings that choose the model provider (docs/operations.md, Configuration). Empty strings count as unset. */
export type ProviderConfig = Partial<
  Pick<Env, 'MODEL_PROVIDER' | 'MODEL' | 'ANTHROPIC_API_KEY' | 'ANTHROPIC_BASE_URL' | 'OPENAI_API_KEY' | 'OPENAI_BASE_URL' | 'LOCAL_MODEL_DELAY_MS'>
>;

export const DEFAULT_MODELS: Record<ProviderName, string> = {
  anthropic: ANTHROPIC_DEFAULT_MODEL,
  openai: OPENAI_DEFAULT_MODEL,
  local: LOCAL_MODEL,
};

/** Each hosted provider's key and base URL settings. */
const HOSTED = {
  anthropic: { key: 'ANTHROPIC_API_KEY', baseUrl: 'ANTHROPIC_BASE_URL', create: (o: HostedOptions) => new AnthropicProvider(o) },
  openai: { key: 'OPENAI_API_KEY', baseUrl: 'OPENAI_BASE_URL', create: (o: HostedOptions) => new OpenAIProvider(o) },
} as const;

const setting = (value: string | undefined) => value?.trim() || undefined;

const misconfigured = (name: string, message: string) => new AppError('SERVICE_UNAVAILABLE', 503, message, { setting: name });

function baseUrl(config: ProviderConfig, name: 'ANTHROPIC_BASE_URL' | 'OPENAI_BASE_URL'): string | undefined {
  const value = setting(config[name]);
  if (value === undefined) return undefined;
  const protocol = URL.canParse(value) ? new URL(value).protocol : '';
  if (protocol !== 'https:' && protocol !== 'http:') throw misconfigured(name, `${name} must be an http(s) URL`);
  return value;
}

/** The provider the service's own settings choose: MODEL_PROVIDER, else the first key present, else local. */
function serviceProvider(config: ProviderConfig): ProviderName {
  const explicit = setting(config.MODEL_PROVIDER)?.toLowerCase();
  if (explicit === undefined) {
    return setting(config.ANTHROPIC_API_KEY) ? 'anthropic' : setting(config.OPENAI_API_KEY) ? 'openai' : 'local';
  }
  if (Object.hasOwn(DEFAULT_MODELS, explicit)) return explicit as ProviderName;
  throw misconfigured('MODEL_PROVIDER', `MODEL_PROVIDER must be anthropic, openai or local, not "${explicit}"`);
}

/**
 * The provider for a run. An explicit MODEL_PROVIDER wins, and naming a hosted one without its
 * key is a configuration error; otherwise an Anthropic key, then an OpenAI key, else `local`.
 * A BYOK key picks its own provider and replaces the service's key (the service's base URL
 * still applies). MODEL names the model of the provider the settings choose; any other
 * provider, and `local` always, runs its default model; `model` (a run's own choice, an eval's)
 * replaces the hosted provider's. Configuration errors are 503 SERVICE_UNAVAILABLE naming the
 * setting, like other missing settings.
 */
export function selectProvider(config: ProviderConfig, byok?: ByokKey | null, model?: string): ModelProvider {
  const configured = serviceProvider(config);
  const name = byok?.provider ?? configured;
  model ??= (name === configured ? setting(config.MODEL) : undefined) ?? DEFAULT_MODELS[name];
  if (name === 'local') {
    const delay = Number(setting(config.LOCAL_MODEL_DELAY_MS) ?? 0);
    return new LocalProvider(Number.isFinite(delay) && delay > 0 ? delay : 0);
  }
  const hosted = HOSTED[name];
  const apiKey = byok?.apiKey ?? setting(config[hosted.key]);
  if (!apiKey) throw misconfigured(hosted.key, `MODEL_PROVIDER is ${name} but ${hosted.key} is not set`);
  return hosted.create({ apiKey, model, baseUrl: baseUrl(config, hosted.baseUrl) });
}
