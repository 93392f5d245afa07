import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Page } from 'playwright-core';

/**
 * Saves what `page` looks like as `.wrangler/screenshots/<name>.png`, for a person to look at,
 * when E2E_SCREENSHOTS=1: no test reads them, and each costs the browser a render and an encode.
 */
export async function screenshot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<void> {
  if (process.env.E2E_SCREENSHOTS !== '1') return;
  const path = join('.wrangler', 'screenshots', `${name}.png`);
  mkdirSync(dirname(path), { recursive: true });
  await page.screenshot({ path, ...options });
}
