/**
 * The console's pages, listed once: the routes that serve them (workers/routes/console.tsx), the
 * navigation (its sections, in this order, each linking to its first page), the heading each page
 * starts with, and the view the script draws (console/src/main.ts has one for every `view` here,
 * or it does not compile). A page's path parameters, joined by `/`, are the item its view is about.
 */
export const CONSOLE_PAGES = [
  { path: '/', section: 'Home', title: 'Home', view: 'home' },
  { path: '/marketplace', section: 'Marketplace', title: 'Marketplace', view: 'marketplace' },
  { path: '/marketplace/:slug', section: 'Marketplace', title: 'Skill', view: 'marketplace-skill' },
  { path: '/skills', section: 'Skills', title: 'Skills', view: 'skills' },
  { path: '/skills/:slug', section: 'Skills', title: 'Skill', view: 'skill' },
  { path: '/skills/:slug/run', section: 'Skills', title: 'Run a skill', view: 'run-skill' },
  { path: '/skills/:slug/evals/:id', section: 'Skills', title: 'Eval', view: 'skill-eval' },
  { path: '/runs', section: 'Runs', title: 'Runs', view: 'runs' },
  { path: '/runs/:id', section: 'Runs', title: 'Run', view: 'run' },
  { path: '/workflows', section: 'Workflows', title: 'Workflows', view: 'workflows' },
  { path: '/workflows/runs/:runId', section: 'Workflows', title: 'Workflow run', view: 'workflow-run' },
  { path: '/workflows/:slug', section: 'Workflows', title: 'Workflow', view: 'workflow' },
  { path: '/traces', section: 'Traces', title: 'Traces', view: 'traces' },
  { path: '/traces/:id', section: 'Traces', title: 'Trace', view: 'trace' },
  { path: '/memory', section: 'Memory', title: 'Memory', view: 'memory' },
  { path: '/settings', section: 'Settings', title: 'Settings', view: 'settings' },
] as const;

export type ConsolePage = (typeof CONSOLE_PAGES)[number];
export type Section = ConsolePage['section'];
export type View = ConsolePage['view'];

/** The navigation: each section once, in the order of the pages, linking to its first page. */
export const SECTIONS: { path: string; name: Section }[] = CONSOLE_PAGES.filter(
  (page, i) => CONSOLE_PAGES.findIndex((p) => p.section === page.section) === i,
).map((page) => ({ path: page.path, name: page.section }));
