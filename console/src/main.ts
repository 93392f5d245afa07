import type { View } from '../../workers/console/pages';
import { ApiError } from './api';
import { alertBox, show } from './dom';
import { home } from './views/home';
import { marketplace, marketplaceSkill } from './views/marketplace';
import { run } from './views/run';
import { runs, runSkill } from './views/runs';
import { memory, skills } from './views/sections';
import { skillEval } from './views/evals';
import { skill } from './views/skill';
import { trace, traces } from './views/traces';
import { settings } from './views/settings';
import { workflow, workflowRun, workflows } from './views/workflows';

/** The view each console page names in `data-view` (one for each page of workers/console/pages.ts), drawn into #app from the public API. */
const VIEWS: Record<View, (app: HTMLElement, item: string) => Promise<void>> = {
  home,
  marketplace,
  'marketplace-skill': marketplaceSkill,
  skills,
  skill,
  'run-skill': runSkill,
  'skill-eval': skillEval,
  runs,
  run,
  workflows,
  workflow,
  'workflow-run': workflowRun,
  traces,
  trace,
  memory,
  settings,
};

async function start() {
  const app = document.getElementById('app')!;
  const view = VIEWS[document.body.dataset.view as View] as (typeof VIEWS)[View] | undefined;
  try {
    if (!view) return;
    await view(app, document.body.dataset.item ?? '');
  } catch (error) {
    show(app, alertBox(error instanceof ApiError ? error.message : 'Something went wrong loading this page. Reload to try again.'));
  } finally {
    app.removeAttribute('aria-busy');
  }
}

void start();
