// npm run docs:scopes: writes docs/scopes.md from the route-to-scope table.
import { writeFileSync } from 'node:fs';
import { SCOPES_PAGE, scopesPage } from './lib/scopes-page';

writeFileSync(SCOPES_PAGE, scopesPage());
console.log(`docs:scopes: wrote ${SCOPES_PAGE}`);
