import { Webhook } from 'standardwebhooks';
import { toBase64 } from './base64';
import { randomBytes } from './crypto';

/** Standard Webhooks secrets carry 24 to 64 random bytes; ours carry 32. */
const SECRET_BYTES = 32;

/** A new signing secret, `whsec_` and base64 of random bytes (the Standard Webhooks form). */
export const newWebhookSecret = (): string => `whsec_${toBase64(randomBytes(SECRET_BYTES))}`;

/**
 * The Standard Webhooks headers of one attempt: `webhook-id` (the same for every attempt),
 * `webhook-timestamp` (this attempt's, in seconds) and `webhook-signature`, one `v1,<base64>`
 * per secret, space-separated, so a receiver that knows any of them (during a rotation's
 * overlap: the old or the new) verifies it. Signed by the Standard Webhooks project's library.
 */
export function webhookHeaders(secrets: string[], messageId: string, at: Date, payload: string): Record<string, string> {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(messageId, at, payload)).join(' '),
  };
}
