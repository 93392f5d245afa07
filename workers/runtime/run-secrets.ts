import type { RunSecret } from '../services/skill-secrets';

/**
 * How a run keeps its bound secrets out of sight and on the sites they are bound to. The model
 * never receives a value: it names a secret as `${NAME}` in a header of an HTTP request, the tool
 * fills it in at the moment of the call if the request goes to an origin the secret is bound to,
 * and everything coming back (tool results, and every event the run records) has each value
 * replaced by `[secret NAME]`.
 */
const PLACEHOLDER = /\$\{([A-Z_][A-Z0-9_]{0,127})\}/g;

/** What masking needs of a secret: its name and its value. */
type Masked = Pick<RunSecret, 'envVar' | 'value'>;

/** A `${NAME}` the model wrote where it may not be filled in; the message names the secret, never its value. */
export class SecretUseError extends Error {}

const boundAs = (name: string, secrets: readonly RunSecret[]) => {
  const secret = secrets.find((s) => s.envVar === name);
  if (!secret) throw new SecretUseError(`No secret ${name} is bound to this skill`);
  return secret;
};

/**
 * Refuses a bound secret in a part of a request that is never filled in (the URL, which lands in
 * logs, and the body): a secret goes in a header or nowhere. `${NAME}` of no bound secret is
 * refused as well, as it always was, so a typo is not sent as it stands.
 */
export function refuseSecretsIn(text: string, part: string, secrets: readonly RunSecret[]): void {
  const [first] = text.matchAll(PLACEHOLDER);
  if (!first) return;
  const name = boundAs(first[1]!, secrets).envVar;
  throw new SecretUseError(`${name} cannot go in the ${part}: a secret is sent only in a header`);
}

/**
 * Fills `${NAME}` in a header value for a request to `origin` (the origin of the URL as the model
 * wrote it): only a secret bound to that origin is filled in; any other is refused, so a run
 * cannot hand a credential to a host its binding does not name.
 */
export function resolveSecrets(text: string, origin: string, secrets: readonly RunSecret[]): string {
  return text.replace(PLACEHOLDER, (_whole, name: string) => {
    const secret = boundAs(name, secrets);
    if (secret.origins.includes(origin)) return secret.value;
    throw new SecretUseError(
      secret.origins.length === 0
        ? `${name} is bound to no site, so it is never sent`
        : `${name} may be sent only to ${secret.origins.join(', ')}, not to ${origin}`,
    );
  });
}

interface Occurrence {
  start: number;
  end: number;
  envVar: string;
}

/** Every occurrence of every bound value, overlapping ones included. */
function occurrences(text: string, secrets: readonly Masked[]): Occurrence[] {
  const found: Occurrence[] = [];
  for (const { envVar, value } of secrets) {
    if (!value) continue;
    for (let at = text.indexOf(value); at !== -1; at = text.indexOf(value, at + 1)) found.push({ start: at, end: at + value.length, envVar });
  }
  return found.sort((a, b) => a.start - b.start || b.end - a.end);
}

/**
 * Masks every occurrence of a bound value. Overlapping occurrences are masked as one span, so
 * no character of any value is left showing, named by the values not contained in another.
 */
export function redactSecrets(text: string, secrets: readonly Masked[]): string {
  let out = '';
  let at = 0;
  let span: { start: number; end: number; names: string[] } | null = null;
  const close = () => {
    if (span) out += `${text.slice(at, span.start)}[secret ${span.names.join(', ')}]`;
    if (span) at = span.end;
  };
  for (const o of occurrences(text, secrets)) {
    if (span && o.start < span.end) {
      if (o.end > span.end) {
        span.end = o.end;
        span.names.push(o.envVar);
      }
      continue;
    }
    close();
    span = { start: o.start, end: o.end, names: [o.envVar] };
  }
  close();
  return out + text.slice(at);
}

/** The same for any JSON value (event payloads), walking arrays and objects. */
export function redactDeep<T>(value: T, secrets: readonly Masked[]): T {
  if (secrets.length === 0) return value;
  if (typeof value === 'string') return redactSecrets(value, secrets) as T;
  if (Array.isArray(value)) return value.map((item) => redactDeep(item, secrets)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactDeep(v, secrets)])) as T;
  }
  return value;
}

const sites = (secret: RunSecret) => (secret.origins.length ? `sent only to ${secret.origins.join(', ')}` : 'never sent: bound to no site');

/** What the system prompt tells the model about its secrets: their names, where each may go and how, never values. */
export const secretsNotice = (secrets: readonly RunSecret[]): string =>
  secrets.length === 0
    ? ''
    : `\n\nSecrets bound to this skill: ${secrets.map((s) => `${s.envVar} (${sites(s)})`).join('; ')}. Write one as \${NAME} in a header value of http_request and it is filled in when the request is sent, only for a request to a site it is bound to; in the url or the body, or for any other site, the request is refused. You never see the values, and they are masked in what comes back.`;

interface Event {
  type: string;
  payload: object;
}

const messageText = (event: Event): string | null => {
  if (event.type !== 'agent.message') return null;
  const content = (event.payload as { content?: { type: string; text?: string }[] }).content;
  return content?.length === 1 && content[0]!.type === 'text' ? (content[0]!.text ?? '') : null;
};

const message = <E extends Event>(text: string) => ({ type: 'agent.message', payload: { content: [{ type: 'text', text }] } }) as unknown as E;

/** A cut-off answer may end in the first characters of a value, which masking cannot recognise: they are dropped. */
export function withoutPartialValue(text: string, secrets: readonly Masked[]): string {
  let end = text.length;
  for (const { value } of secrets) {
    for (let n = Math.min(value.length - 1, end); n > 0; n--) {
      if (text.slice(0, end).endsWith(value.slice(0, n))) {
        end -= n;
        break;
      }
    }
  }
  return text.slice(0, end);
}

/**
 * Masks secrets in a run's events as they are recorded. A model streams text in pieces, and a
 * value can arrive split across two `agent.message` deltas, so streamed text is held back by
 * one character less than the longest value (and further, so no value straddles the cut)
 * and masked before it goes out; any other event first releases what is held, so the order of
 * events is kept. `flush` releases the rest when the run stops.
 */
export function eventRedactor<E extends Event>(secrets: readonly Masked[]) {
  const holdBack = Math.max(0, ...secrets.map((s) => s.value.length - 1));
  let pending = '';
  const release = (keep: number): E[] => {
    let cut = Math.max(0, pending.length - keep);
    // A value that starts before the cut is whole in `pending` (it holds back enough): keep it for later entirely.
    const found = occurrences(pending, secrets);
    for (let o = found.find((f) => f.start < cut && f.end > cut); o; o = found.find((f) => f.start < cut && f.end > cut)) cut = o.start;
    const out = redactSecrets(pending.slice(0, cut), secrets);
    pending = pending.slice(cut);
    return out ? [message<E>(out)] : [];
  };
  return {
    push(events: E[]): E[] {
      if (secrets.length === 0) return events;
      return events.flatMap((event) => {
        const text = messageText(event);
        if (text !== null) {
          pending += text;
          return release(holdBack);
        }
        return [...release(0), redactDeep(event, secrets)];
      });
    },
    flush: (): E[] => release(0),
  };
}
