import { z } from 'zod';
import { CursorQuery } from '../lib/pagination';
import { EvalPage, getEval, listEvals, SkillEval, StartedEval, StartEvalBody, startEval } from '../services/skill-evals';
import { SkillSlug } from '../services/skills';
import { defineCapability, READ_ONLY, type Area } from './capability';

const BySlug = z.object({ slug: SkillSlug.describe('The installed skill’s slug') });

/** Eval jobs of an installed skill (docs/skills.md, Evals); the mount's `:slug` names the skill. */
export const skillEvalsArea: Area = {
  mount: '/api/v1/skills/:slug/evals',
  tag: 'Skills',
  capabilities: [
    defineCapability({
      name: 'run-skill-eval',
      title: 'Evaluate a skill',
      description:
        'Starts an eval of an installed skill version that carries eval cases: each case runs with the skill and, as the baseline, without it (same model, same input), every run graded (machine checks; expectations by a model). Answers at once with the eval id (status queued); read it with get-skill-eval. The runs are ordinary executions, charged like any run; set budget (Ds) to cap the whole job.',
      access: { auth: 'credential', scope: 'tool:execute' },
      input: BySlug.extend(StartEvalBody.shape),
      output: StartedEval,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      http: { method: 'POST', path: '/run', status: 202, summary: 'Start an eval job of the skill: its cases with and without it, graded' },
      run: (ctx, { slug, ...body }) => startEval(ctx.db, ctx.env, ctx.actor, slug, body),
    }),
    defineCapability({
      name: 'list-skill-evals',
      title: 'List skill evals',
      description: 'The skill’s eval jobs, newest first, with their pass rates with and without the skill.',
      access: { auth: 'credential', scope: 'library:read' },
      input: BySlug.extend(CursorQuery.shape),
      output: EvalPage,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/', summary: 'The skill’s eval jobs, newest first (cursor pages)' },
      mcp: false,
      run: (ctx, { slug, ...query }) => listEvals(ctx.db, ctx.globalDb, ctx.actor, slug, query),
    }),
    defineCapability({
      name: 'get-skill-eval',
      title: 'Get a skill eval',
      description:
        'One eval job of a skill: its status (queued, running, succeeded, failed, or stopped at its budget), pass rate with and without the skill and the difference, tokens, cost and time, and per case each run with and without the skill with its grades (checks with what failed; expectations with the grader’s verdict and reasoning).',
      access: { auth: 'credential', scope: 'library:read' },
      input: BySlug.extend({ evalId: z.string().min(1).max(40).describe('The eval’s id (eval_<n>)') }),
      output: SkillEval,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:evalId', summary: 'One eval job: status, totals, and each case’s runs with and without the skill, graded' },
      run: (ctx, { slug, evalId }) => getEval(ctx.db, ctx.globalDb, ctx.actor, slug, evalId),
    }),
  ],
};
