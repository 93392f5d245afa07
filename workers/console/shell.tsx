import { HtmlDocument } from '../lib/html-document';
import type { FC } from 'hono/jsx';
import { CONSOLE_SCRIPT, CONSOLE_STYLE } from './assets.generated';
import { SECTIONS, type Section, type View } from './pages';

/** Where the console's fingerprinted files are served. */
export const CONSOLE_ASSET_PATH = '/console/assets';

export interface ShellProps {
  nonce: string;
  csrf: string;
  section: Section;
  /** The page's own heading (the section's name unless the page is one item of it). */
  title: string;
  /** Which view the script draws, and the item it is about (a slug or an id; several path parameters joined by `/`). */
  view: View;
  item?: string;
}

/**
 * The server-rendered frame of every console page: landmarks, the navigation, the heading, and
 * an empty region the console script fills from the public API. The CSRF token is in a meta
 * element for the script's API calls (the cookie session on /api/v1 requires it).
 */
export const ConsoleShell: FC<ShellProps> = (p) => (
  <HtmlDocument
    title={p.title}
    head={
      <>
        <meta name="csrf-token" content={p.csrf} />
        <link rel="stylesheet" href={`${CONSOLE_ASSET_PATH}/${CONSOLE_STYLE}`} />
        <script nonce={p.nonce} src={`${CONSOLE_ASSET_PATH}/${CONSOLE_SCRIPT}`} defer></script>
      </>
    }
  >
    <body data-view={p.view} data-item={p.item}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Workspace AI Skills</span>
        <nav aria-label="Console">
          <ul>
            {SECTIONS.map((s) => (
              <li>
                <a href={s.path} aria-current={s.name === p.section ? 'page' : undefined}>
                  {s.name}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <form method="post" action="/auth/sign-out" class="sign-out">
          <input type="hidden" name="csrf" value={p.csrf} />
          <button type="submit">Sign out</button>
        </form>
      </header>
      <main id="main" tabindex={-1}>
        <h1>{p.title}</h1>
        <p id="api-wait" class="wait-notice" role="status" hidden></p>
        <div id="app" aria-busy="true">
          <noscript>The console needs JavaScript. Everything it shows is also in the API: see /docs.</noscript>
        </div>
      </main>
    </body>
  </HtmlDocument>
);
