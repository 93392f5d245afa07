import { Webhook } from 'standardwebhooks';
import { call } from './api';

/** What a trigger URL needs of its trigger: where to POST and the secret that proves the sender. */
export interface TriggerTarget {
  url: string;
  secret: string;
}

/** POSTs `payload` to the trigger URL, signed as a Standard Webhooks sender signs it. */
export function deliverSigned(trigger: TriggerTarget, payload: unknown, messageId = `msg_${crypto.randomUUID()}`, secret = trigger.secret) {
  const body = JSON.stringify(payload);
  const at = new Date();
  return call(new URL(trigger.url).pathname, {
    method: 'POST',
    rawBody: body,
    headers: {
      'webhook-id': messageId,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign(messageId, at, body),
    },
  });
}

const hex = (bytes: ArrayBuffer) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, '0')).join('');

/** GitHub's X-Hub-Signature-256: the hex HMAC-SHA256 of the body, keyed with the webhook's secret. */
export async function hubSignature(secret: string, body: string) {
  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return `sha256=${hex(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(body)))}`;
}

export interface GithubSent {
  delivery?: string;
  secret?: string;
  /** GitHub's default content type sends the JSON as the form field `payload`. */
  form?: boolean;
}

/** POSTs an event as GitHub's webhook delivery does. */
export async function deliverGithub(trigger: TriggerTarget, event: string, payload: unknown, sent: GithubSent = {}) {
  const json = JSON.stringify(payload);
  const body = sent.form ? new URLSearchParams({ payload: json }).toString() : json;
  return call(new URL(trigger.url).pathname, {
    method: 'POST',
    rawBody: body,
    headers: {
      'content-type': sent.form ? 'application/x-www-form-urlencoded' : 'application/json',
      'user-agent': 'GitHub-Hookshot/0000000',
      'x-github-event': event,
      'x-github-delivery': sent.delivery ?? crypto.randomUUID(),
      'x-github-hook-id': '1',
      'x-hub-signature-256': await hubSignature(sent.secret ?? trigger.secret, body),
    },
  });
}
