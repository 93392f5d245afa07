import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * OAuth Client ID Metadata Documents under `/oauth-client/<name>`: a good one and one per rule
 * the authorization server enforces. `/oauth-client-hits/<name>` counts the fetches of one
 * (the cache test reads it).
 */
const hits = new Map<string, number>();

export function serveClientMetadata(req: IncomingMessage, res: ServerResponse, origin: string): void {
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  const counted = /^\/oauth-client-hits\/(.+)$/.exec(path);
  if (counted) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ hits: hits.get(counted[1]!) ?? 0 }));
    return;
  }
  const name = path.slice('/oauth-client/'.length);
  hits.set(name, (hits.get(name) ?? 0) + 1);
  const clientId = `${origin}${path}`;
  const good = {
    client_id: clientId,
    client_name: 'Metadata Client',
    redirect_uris: ['https://client.example/callback'],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
  const documents: Record<string, object> = {
    good,
    cached: good,
    'wrong-id': { ...good, client_id: `${origin}/oauth-client/good` },
    secret: { ...good, token_endpoint_auth_method: 'client_secret_basic' },
    'http-redirect': { ...good, redirect_uris: ['http://client.example/callback'] },
    'native-app': { ...good, client_name: 'Native Client', redirect_uris: ['com.example.native:/oauth2redirect'] },
    'script-redirect': { ...good, redirect_uris: ['com.example.native:/oauth2redirect', 'javascript:alert(1)//'] },
    large: { ...good, padding: 'x'.repeat(6 * 1024) },
  };
  if (name === 'moved') {
    res.writeHead(302, { location: `${origin}/oauth-client/good` }).end();
  } else if (name in documents) {
    const headers = { 'content-type': 'application/json', 'cache-control': name === 'cached' ? 'max-age=600' : 'no-store' };
    res.writeHead(200, headers).end(JSON.stringify(documents[name]));
  } else {
    res.writeHead(404).end();
  }
}
