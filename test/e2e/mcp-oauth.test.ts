import { createServer, type Server } from 'node:http';
import { auth, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from './chromium';
import { freePort, newAccount, type RunningService } from './helpers';
import { startPrepared } from './prepared';
import { screenshot } from './screenshot';

/**
 * A stock MCP client as shipped: the TypeScript SDK's own OAuth machinery (`auth()` and the
 * transport's `authProvider`) given nothing but the server's URL, with a person signing in and
 * consenting in headless Chromium.
 */

/** The provider an application writes for the SDK: it keeps what the SDK hands it, and opens the browser. */
class BrowserProvider implements OAuthClientProvider {
  information?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  authorizationUrl?: URL;

  constructor(
    readonly redirectUrl: string,
    readonly clientMetadata: OAuthClientMetadata,
    readonly clientMetadataUrl?: string,
  ) {}

  clientInformation = () => this.information;
  saveClientInformation = (information: OAuthClientInformationMixed) => void (this.information = information);
  tokens = () => this.saved;
  saveTokens = (tokens: OAuthTokens) => void (this.saved = tokens);
  redirectToAuthorization = (url: URL) => void (this.authorizationUrl = url);
  saveCodeVerifier = (verifier: string) => void (this.verifier = verifier);
  codeVerifier = () => this.verifier;
}

describe('stock MCP clients signing in with nothing but the URL', () => {
  let service: RunningService;
  let browser: Browser;
  let clientSite: Server;
  let clientOrigin: string;

  beforeAll(async () => {
    const port = await freePort();
    clientOrigin = `http://127.0.0.1:${port}`;
    // The client's own site: its redirect target and its Client ID Metadata Document.
    clientSite = createServer((req, res) => {
      if (req.url === '/client.json') {
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' });
        res.end(JSON.stringify({ ...metadata('Metadata Document Client'), client_id: `${clientOrigin}/client.json` }));
      } else res.end('You can close this window.');
    }).listen(port, '127.0.0.1');
    [service, browser] = await Promise.all([
      // Only for this local run: the metadata document is served over http on a loopback address.
      startPrepared(90_000, { args: ['--var', 'LOCAL_DEVELOPMENT:true'] }),
      launchChromium(),
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    clientSite?.close();
  });

  const metadata = (name: string): OAuthClientMetadata => ({
    client_name: name,
    redirect_uris: [`${clientOrigin}/callback`],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  });

  /** The person's part: sign in on the service's page, check who asks, allow; answers the code the client receives. */
  async function consent(authorizationUrl: URL, clientName: string): Promise<string> {
    const account = await newAccount(service.base, 'MCP Person');
    const page = await browser.newPage();
    await page.goto(authorizationUrl.href);
    await page.getByLabel('Email').fill(account.email);
    await page.getByLabel('Password').fill(account.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: `Allow an app at ${new URL(clientOrigin).host} to use your account?` }).waitFor();
    await page.getByText(`It calls itself “${clientName}”.`).waitFor();
    await screenshot(page, `mcp-consent-${clientName.replace(/\W+/g, '-')}`, { fullPage: true });
    await Promise.all([page.waitForURL((url) => url.href.startsWith(`${clientOrigin}/callback`)), page.getByRole('button', { name: 'Allow' }).click()]);
    const code = new URL(page.url()).searchParams.get('code')!;
    await page.close();
    return code;
  }

  const transportFor = (provider: OAuthClientProvider) => new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { authProvider: provider });

  /** The whole life of a connection: refused, signed in, tools used, refreshed, revoked. */
  async function signInAndUse(provider: BrowserProvider, clientName: string) {
    const mcpUrl = `${service.base}/mcp`;
    // The first connection is refused: the SDK reads the challenge, discovers the server, gets a client id and sends the person to sign in.
    await expect(new Client({ name: clientName, version: '1.0.0' }).connect(transportFor(provider))).rejects.toThrow(/Unauthorized/i);
    const authorizationUrl = provider.authorizationUrl!;
    expect(authorizationUrl.searchParams.get('resource')).toBe(mcpUrl);
    expect(authorizationUrl.searchParams.get('scope')).toContain('tool:execute');

    const transport = transportFor(provider);
    await transport.finishAuth(await consent(authorizationUrl, clientName));
    expect(provider.saved).toMatchObject({ access_token: expect.stringMatching(/^oat_/), refresh_token: expect.stringMatching(/^ort_/) });

    const client = new Client({ name: clientName, version: '1.0.0' });
    await client.connect(transportFor(provider));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['execute-skill', 'search-marketplace', 'read-memory']));
    const memory = await client.callTool({ name: 'read-memory', arguments: {} });
    expect(memory.isError).toBeFalsy();
    // The token was issued for /mcp: the REST API refuses it, saying why.
    const rest = await fetch(`${service.base}/api/v1/profile`, { headers: { authorization: `Bearer ${provider.saved!.access_token}` } });
    expect(rest.status).toBe(401);
    expect(rest.headers.get('www-authenticate')).toContain('issued for');

    // Refreshing: the SDK's auth() with a refresh token rotates both tokens.
    const before = provider.saved!;
    expect(await auth(provider, { serverUrl: mcpUrl })).toBe('AUTHORIZED');
    expect(provider.saved!.access_token).not.toBe(before.access_token);
    expect(provider.saved!.refresh_token).not.toBe(before.refresh_token);
    expect((await client.callTool({ name: 'list-installed-skills', arguments: {} })).isError).toBeFalsy();
    await client.close();

    // Revoked: the next connection is refused and the SDK cannot refresh its way back in.
    const revoked = await fetch(`${service.base}/auth/oauth2/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: provider.saved!.refresh_token!, client_id: provider.information!.client_id }),
    });
    expect(revoked.status).toBe(200);
    const refused = await fetch(mcpUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${provider.saved!.access_token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('error="invalid_token"');
    // The SDK's refresh attempt is refused too, in a shape it parses (RFC 6749 invalid_grant).
    await expect(new Client({ name: clientName, version: '1.0.0' }).connect(transportFor(provider))).rejects.toThrow('The refresh token is not valid');
  }

  it('through dynamic client registration', async () => {
    const provider = new BrowserProvider(`${clientOrigin}/callback`, metadata('SDK Registered Client'));
    await signInAndUse(provider, 'SDK Registered Client');
    expect(provider.information!.client_id).not.toContain('://');
  });

  it('through a Client ID Metadata Document', async () => {
    // The SDK takes an https metadata URL only, which a loopback test server cannot offer the
    // service with a trusted certificate. So the SDK is shown choosing the document over
    // registration (on this server's metadata), then given the loopback document's URL as its id.
    const choosing = new BrowserProvider(`${clientOrigin}/callback`, metadata('unused'), 'https://client.example/mcp-client.json');
    await expect(new Client({ name: 'choosing', version: '1.0.0' }).connect(transportFor(choosing))).rejects.toThrow(/Unauthorized/i);
    expect(choosing.authorizationUrl!.searchParams.get('client_id')).toBe('https://client.example/mcp-client.json');

    const provider = new BrowserProvider(`${clientOrigin}/callback`, metadata('Metadata Document Client'));
    provider.information = { client_id: `${clientOrigin}/client.json` };
    await signInAndUse(provider, 'Metadata Document Client');
  });
});
