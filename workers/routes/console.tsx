import { Hono, type Context, type Next } from 'hono';
import { csrfToken, newNonce, pagePrincipal, pageSecurityHeaders, signInThenReturn } from '../auth/web';
import { CONSOLE_ASSETS } from '../console/assets.generated';
import { CONSOLE_PAGES, type ConsolePage } from '../console/pages';
import { CONSOLE_ASSET_PATH, ConsoleShell } from '../console/shell';
import type { AppEnv } from '../env';
import { notFound } from '../errors';

type Ctx = Context<AppEnv>;

/**
 * The console's policy: its one script by nonce (no inline script, no handlers in markup), its
 * stylesheet and API calls, the signed stream and the control-plane socket from this origin only.
 */
const consoleCsp = (nonce: string) =>
  `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`;

/**
 * A console page for the signed-in person (a frame the console script fills from /api/v1, about
 * the item its path names); anyone else is sent to sign in and brought back.
 */
async function consolePage(c: Ctx, page: ConsolePage) {
  if (!(await pagePrincipal(c))) return signInThenReturn(c, c.req.path);
  const nonce = newNonce();
  const csrf = csrfToken(c);
  pageSecurityHeaders(c, consoleCsp(nonce));
  const item = Object.values(c.req.param() as Record<string, string>).join('/') || undefined;
  return c.html(<ConsoleShell nonce={nonce} csrf={csrf} section={page.section} title={page.title} view={page.view} item={item} />);
}

/** `/` is the console for a signed-in person; for anyone else the landing page answers (next route). */
const homeOrLanding = (page: ConsolePage) => async (c: Ctx, next: Next) => ((await pagePrincipal(c)) ? consolePage(c, page) : next());

/** The console's pages (workers/console/pages.ts) and its files, fingerprinted by content and so cacheable for good. */
export const consoleRoutes = new Hono<AppEnv>();
for (const page of CONSOLE_PAGES) consoleRoutes.get(page.path, page.path === '/' ? homeOrLanding(page) : (c) => consolePage(c, page));
consoleRoutes.get(`${CONSOLE_ASSET_PATH}/:file`, (c) => {
  const file = c.req.param('file');
  // Own entries only: `constructor` or `__proto__` must not find Object.prototype's.
  if (!Object.hasOwn(CONSOLE_ASSETS, file)) throw notFound('Asset');
  const asset = CONSOLE_ASSETS[file]!;
  return c.body(asset.body, 200, {
    'content-type': asset.type,
    'cache-control': 'public, max-age=31536000, immutable',
    'x-content-type-options': 'nosniff',
  });
});
