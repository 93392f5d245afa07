import { createServer, type Server } from 'node:http';
import * as oauth from 'oauth4webapi';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from './chromium';
import { freePort, newAccount, type RunningService } from './helpers';
import { startPrepared } from './prepared';
import { screenshot } from './screenshot';

/**
 * The whole authorization-code flow as a real client and a real browser see it: oauth4webapi
 * (a conformant client that checks `iss`, state, PKCE and the id_token) against `npm start`,
 * with headless Chromium (Debian's package, installed by .ci/run) signing in and consenting.
 */
describe('OAuth 2.1 authorization code flow in a browser', () => {
  let service: RunningService;
  let browser: Browser;
  let callback: Server;
  let redirectUri: string;
  const insecure = { [oauth.allowInsecureRequests]: true }; // wrangler dev serves http on loopback

  beforeAll(async () => {
    const port = await freePort();
    redirectUri = `http://127.0.0.1:${port}/callback`;
    // The client's redirect target: it only has to answer, the test reads the URL from the browser.
    callback = createServer((_req, res) => res.end('You can close this window.')).listen(port, '127.0.0.1');
    [service, browser] = await Promise.all([startPrepared(), launchChromium()]);
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    callback?.close();
  });

  /**
   * A browser page sent to the authorize URL, which sends it to sign in first: signed in as the
   * person, it is back at the consent page. Every page must render within its own CSP
   * (nonce-styled, no script): its console errors are collected.
   */
  async function signInFrom(authorizeUrl: URL, email: string, password: string) {
    const page = await browser.newPage();
    const consoleErrors: string[] = [];
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
    await page.goto(authorizeUrl.href);
    expect(new URL(page.url()).pathname).toBe('/auth/sign-in');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    return { page, consoleErrors };
  }

  it('signs in, consents, gets tokens, calls the API within scope, refreshes and revokes', async () => {
    const base = service.base;
    const { email, password } = await newAccount(base, 'E2E Person');

    // Discovery at the RFC 8414 address for an issuer with a path.
    const issuer = new URL(`${base}/auth`);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
    expect(as.code_challenge_methods_supported).toEqual(['S256']);

    // Registration is open: no session, no Origin.
    const registered = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(
        as,
        {
          client_name: 'E2E Client',
          redirect_uris: [redirectUri],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
        },
        insecure,
      ),
    );
    const client: oauth.Client = { client_id: registered.client_id };

    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const nonce = oauth.generateRandomNonce();
    const authorizeUrl = new URL(as.authorization_endpoint!);
    authorizeUrl.search = new URLSearchParams({
      client_id: client.client_id,
      response_type: 'code',
      redirect_uri: redirectUri,
      scope: 'openid profile profile:read memory:read offline_access',
      state,
      nonce,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();

    // The browser: authorize sends it to sign in, then back to the consent screen.
    const { page, consoleErrors } = await signInFrom(authorizeUrl, email, password);
    await page.getByRole('heading', { name: `Allow an app at ${new URL(redirectUri).host} to use your account?` }).waitFor();
    await page.getByText('It calls itself “E2E Client”.').waitFor();
    expect(await page.getByRole('listitem').allTextContents()).toEqual(
      expect.arrayContaining([expect.stringContaining('See your name, email and workspaces'), expect.stringContaining("Read the workspace's shared memory")]),
    );
    await Promise.all([page.waitForURL((url) => url.href.startsWith(redirectUri)), page.getByRole('button', { name: 'Allow' }).click()]);
    const callbackUrl = new URL(page.url());
    await page.close();
    expect(consoleErrors).toEqual([]);

    // oauth4webapi checks state and the RFC 9207 `iss`, then PKCE and the id_token at the token endpoint.
    const params = oauth.validateAuthResponse(as, client, callbackUrl, state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, verifier, insecure),
      { expectedNonce: nonce, requireIdToken: true },
    );
    expect(tokens).toMatchObject({ token_type: 'bearer', expires_in: 3600, refresh_token: expect.any(String) });
    expect(oauth.getValidatedIdTokenClaims(tokens)).toMatchObject({ iss: issuer.href, aud: client.client_id, name: 'E2E Person' });

    const api = (accessToken: string, path: string) => fetch(`${base}${path}`, { headers: { authorization: `Bearer ${accessToken}` } });
    const profile = await api(tokens.access_token, '/api/v1/profile');
    expect(profile.status).toBe(200);
    expect(await profile.json()).toMatchObject({ email, credential: { type: 'oauth' }, scopes: ['profile:read', 'memory:read'] });
    expect((await api(tokens.access_token, '/api/v1/memory')).status).toBe(200);
    const outside = await api(tokens.access_token, '/api/v1/billing/balance');
    expect(outside.status).toBe(403);
    expect(((await outside.json()) as { error: { message: string } }).error.message).toContain('billing:read');

    // Refresh rotates the refresh token; the new access token works.
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure),
    );
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect((await api(refreshed.access_token, '/api/v1/profile')).status).toBe(200);

    // Revoking the refresh token ends the grant at once, at the API too.
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), refreshed.refresh_token!, insecure));
    expect((await api(refreshed.access_token, '/api/v1/profile')).status).toBe(401);
    expect((await api(tokens.access_token, '/api/v1/profile')).status).toBe(401);
  });
  it('lets a native app sign in through its own URI scheme: the page names it and warns, then says to return to the app and sends Chromium there', async () => {
    const base = service.base;
    const { email, password } = await newAccount(base, 'E2E Person');
    const nativeRedirect = 'com.example.native-e2e:/oauth2redirect';
    const registered = await fetch(`${base}/auth/oauth2/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Native E2E', redirect_uris: [nativeRedirect], token_endpoint_auth_method: 'none' }),
    });
    expect(registered.status).toBe(201);
    const clientId = ((await registered.json()) as { client_id: string }).client_id;
    const verifier = oauth.generateRandomCodeVerifier();
    const authorizeUrl = new URL(`${base}/auth/oauth2/authorize`);
    authorizeUrl.search = new URLSearchParams({
      client_id: clientId,
      response_type: 'code',
      redirect_uri: nativeRedirect,
      scope: 'profile:read',
      state: 'native-state',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();

    const { page, consoleErrors } = await signInFrom(authorizeUrl, email, password);
    await page.getByRole('heading', { name: 'Allow the app that opens com.example.native-e2e: links to use your account?' }).waitFor();
    await page.getByText('Any app installed on your device can claim com.example.native-e2e: links').waitFor();
    await screenshot(page, 'oauth-consent-native-app', { fullPage: true });
    // The answer is a page that sends Chromium to the scheme, which hands the URL to the app
    // registered for it; headless, it has none, so that navigation ends there (aborted) and the
    // page stays, saying what happened, with a link to the app.
    const [handedOver] = await Promise.all([
      page.waitForEvent('requestfailed', (request) => request.url().startsWith(`${nativeRedirect}?`)),
      page.getByRole('button', { name: 'Allow' }).click(),
    ]);
    await page.getByRole('heading', { name: 'You can return to Native E2E now' }).waitFor();
    expect(await page.getByRole('link', { name: 'Open Native E2E' }).getAttribute('href')).toBe(handedOver.url());
    await screenshot(page, 'oauth-return-to-native-app', { fullPage: true });
    await page.close();
    expect(consoleErrors).toEqual([]);
    const launched = new URL(handedOver.url());
    expect(launched.searchParams.get('state')).toBe('native-state');
    const exchanged = await fetch(`${base}/auth/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: launched.searchParams.get('code')!,
        client_id: clientId,
        redirect_uri: nativeRedirect,
        code_verifier: verifier,
      }),
    });
    expect(exchanged.status).toBe(200);
  });
});
