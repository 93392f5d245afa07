import { afterEach, describe, expect, it } from 'vitest';
import { resetClock } from '../../workers/lib/clock';
import { BASE, signUp } from '../helpers/api';
import { cookieHeader, hidden, raw, setCookieValue } from '../helpers/oauth';

/**
 * Sign-in and redirects: a return address is a path here or nothing, the authorization endpoint
 * redirects to a client only after a person answered, client-chosen text cannot rearrange the
 * consent page, password guessing slows the guesser without locking the owner out, and /mcp
 * trusts loopback browser origins only in local development.
 */

afterEach(() => resetClock());

/** Posts the sign-in form (with a valid CSRF pair) from `ip`. */
async function signInPage(values: { email: string; password: string; next?: string }, ip = '192.0.2.10') {
  const opened = await raw('/auth/sign-in');
  const csrf = setCookieValue(opened, '__Host-csrf')!;
  return raw('/auth/sign-in', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `__Host-csrf=${csrf}`, origin: BASE, 'cf-connecting-ip': ip },
    body: new URLSearchParams({ csrf, ...values }),
  });
}

describe('the return address after signing in', () => {
  // Each decodes (once, as a query or form value) to something a browser reads as another host, or that cannot be a Location.
  const hostile = [
    '/\t/evil.example',
    '/\n/evil.example',
    '/\r\n/evil.example',
    '/ /evil.example',
    '//evil.example',
    '/\\evil.example',
    '/\\/evil.example',
    'https://evil.example/',
    '/\u200b/evil.example',
    'evil.example',
  ];

  it.each(hostile.map((next) => [JSON.stringify(next), next]))(
    'falls back to the sign-in page for next=%s, never another host and never a 500',
    async (_label, next) => {
      const user = await signUp();
      const posted = await signInPage({ email: user.email, password: user.password, next });
      expect(posted.status).toBe(303);
      expect(posted.headers.get('location')).toBe('/auth/sign-in');

      // Already signed in, the page sends the browser straight on.
      const signedIn = await raw(`/auth/sign-in?next=${encodeURIComponent(next)}`, { headers: { cookie: cookieHeader(user) } });
      expect(signedIn.status).toBe(302);
      expect(signedIn.headers.get('location')).toBe('/auth/sign-in');
      // The form carries the checked value, not the hostile one.
      const fresh = await raw(`/auth/sign-in?next=${encodeURIComponent(next)}`);
      expect(hidden(await fresh.text(), 'next')).toBe('/auth/sign-in');
    },
  );

  it('keeps a path here, with its query and fragment, as the URL parser writes it', async () => {
    const user = await signUp();
    const next = '/auth/oauth2/authorize?client_id=x&scope=a%20b#top';
    const posted = await signInPage({ email: user.email, password: user.password, next });
    expect(posted.headers.get('location')).toBe(next);
    const dotted = await raw(`/auth/sign-in?next=${encodeURIComponent('/a/../activate')}`, { headers: { cookie: cookieHeader(user) } });
    expect(dotted.headers.get('location')).toBe('/activate');
  });
});
