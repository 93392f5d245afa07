import { api, ApiError, post, type Call } from '../api';
import { field, h, show, statusBadge, when } from '../dom';
import { readApiStream } from '../live';
import { schemaForm } from '../schema-form';
import { drawGraph, submitForm, workflowRunPanel, type Entry, type Snapshot } from '../workflow-run';
import { schedulesSection } from './schedules';
import { declaredGithub, triggersSection } from './triggers';

const path = (slug: string) => `/workflows/${encodeURIComponent(slug)}`;
const runPath = (runId: string) => `/workflows/runs/${encodeURIComponent(runId)}`;
/** The console's link to a step's skill run: that run's page. */
const runPage = (stepId: string, executionId: string) => h('a', { href: `/runs/${encodeURIComponent(executionId)}` }, `Open the run of ${stepId}`);

/** What the console reads of an input schema, which the API describes as any JSON Schema. */
type InputSchema = { properties?: Record<string, unknown>; required?: string[] } | undefined;

/** Workflows: the installed definitions, installing one from JSON (compile errors shown at the box), and recent runs. */
export async function workflows(app: HTMLElement) {
  const [{ workflows: installed }, runs] = await Promise.all([api('/workflows/definitions'), api('/workflows/runs', { query: { limit: 20 } })]);
  const definition = h('textarea', { id: 'definition', rows: 12, spellcheck: 'false', required: true, 'aria-describedby': 'definition-hint' });
  const problem = h('div');
  const install = h(
    'form',
    {
      'aria-labelledby': 'install-h',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        show(problem);
        definition.removeAttribute('aria-invalid');
        const fail = (message: string) => {
          definition.setAttribute('aria-invalid', 'true');
          show(problem, h('p', { class: 'error', role: 'alert', id: 'definition-error' }, message));
          definition.setAttribute('aria-errormessage', 'definition-error');
        };
        let parsed: { id?: unknown };
        try {
          parsed = JSON.parse(definition.value);
        } catch (error) {
          return fail(`The definition is not valid JSON: ${(error as Error).message}`);
        }
        if (typeof parsed?.id !== 'string') return fail('The definition needs an "id": the workflow\u2019s slug.');
        // Whether it is a definition is the service's to say: it answers a compile error at its place.
        const body = { definition: parsed } as Call<'/workflows/{slug}/install', 'post'>['body'];
        try {
          const record = await post('/workflows/{slug}/install', { path: { slug: parsed.id }, body });
          location.assign(path(record.slug));
        } catch (error) {
          const at = error instanceof ApiError && typeof error.details.field === 'string' ? ` (at ${error.details.field.replace(/^definition\./, '')})` : '';
          fail(error instanceof ApiError ? `${error.message}${at}` : 'The workflow could not be installed.');
        }
      },
    },
    h('h2', { id: 'install-h' }, 'Install a workflow'),
    field('Definition (JSON)', definition),
    h('p', { id: 'definition-hint', class: 'muted' }, 'A workflow definition: ', h('a', { href: '/schemas/workflow-definition.json' }, 'its JSON Schema'), '.'),
    problem,
    h('button', { type: 'submit' }, 'Install'),
  );
  show(
    app,
    h('h2', {}, 'Installed'),
    installed.length
      ? h(
          'ul',
          { class: 'grid', 'aria-label': 'Installed workflows' },
          installed.map((w) => {
            const schema = w.inputSchema as InputSchema;
            const inputs = Object.keys(schema?.properties ?? {}).map((name) => (schema?.required?.includes(name) ? name : `${name} (optional)`));
            return h(
              'li',
              { class: 'card' },
              h('h3', {}, h('a', { href: path(w.slug) }, w.name)),
              h('p', {}, w.description),
              h(
                'dl',
                { class: 'facts' },
                h('dt', {}, 'Category'),
                h('dd', {}, w.category),
                h('dt', {}, 'Inputs'),
                h('dd', {}, inputs.length ? inputs.join(', ') : 'none'),
                w.triggers.length
                  ? [h('dt', {}, 'Triggers'), h('dd', {}, w.triggers.map((t) => (typeof t === 'string' ? t : JSON.stringify(t))).join(', '))]
                  : null,
                w.requiresConnector ? [h('dt', {}, 'Needs'), h('dd', {}, `the ${w.requiresConnector} connector`)] : null,
              ),
            );
          }),
        )
      : h('p', { class: 'muted' }, 'No workflows installed yet.'),
    install,
    h('h2', {}, 'Recent runs'),
    runs.runs.length
      ? h(
          'ul',
          { class: 'plain', 'aria-label': 'Workflow runs' },
          runs.runs.map((r) =>
            h(
              'li',
              {},
              h('a', { href: runPath(r.runId) }, `${r.workflowId} run`),
              ' ',
              statusBadge(r.status),
              ' ',
              h('span', { class: 'muted' }, when(r.createdAt)),
            ),
          ),
        )
      : h('p', { class: 'muted' }, 'No workflow runs yet.'),
  );
}

/** One workflow: its steps, a launch form generated from its input schema, its schedules and its triggers. */
export async function workflow(app: HTMLElement, slug: string) {
  const record = await api('/workflows/{slug}', { path: { slug } });
  const definition = JSON.parse(record.definition) as { inputSchema?: object; graph: Entry[]; metadata?: { triggers?: unknown[] } };
  document.querySelector('h1')!.textContent = record.name;
  const form = schemaForm(definition.inputSchema, 'input', 'Inputs (JSON)');
  const button = h('button', { type: 'submit' }, 'Launch');
  const [schedules, triggers] = await Promise.all([schedulesSection(slug, definition.inputSchema), triggersSection(slug, declaredGithub(definition.metadata))]);
  show(
    app,
    h('p', {}, record.description),
    h(
      'form',
      {
        'aria-labelledby': 'launch-h',
        onsubmit: (e: Event) => {
          e.preventDefault();
          button.disabled = true;
          void submitForm(form, 'inputs', async (inputs) => {
            const launched = await post('/workflows/{id}/launch', { path: { id: slug }, body: { inputs: inputs as Record<string, unknown> } });
            location.assign(runPath(launched.runId));
          }).finally(() => (button.disabled = false));
        },
      },
      h('h2', { id: 'launch-h' }, 'Launch'),
      form.element,
      button,
    ),
    h('h2', {}, 'Steps'),
    drawGraph(definition.graph, () => undefined, runPage),
    schedules,
    triggers,
  );
}

/** A run: the shared run panel (../workflow-run.ts) acting through /api/v1, followed live over the run's event stream. */
export async function workflowRun(app: HTMLElement, runId: string) {
  const { run } = await api('/workflows/runs/{runId}', { path: { runId } });
  const graph = await api('/workflows/{slug}', { path: { slug: run.workflowId } })
    .then((w) => (JSON.parse(w.definition) as { graph: Entry[] }).graph)
    .catch(() => [] as Entry[]);
  document.querySelector('h1')!.textContent = `${run.workflowId} run`;
  let seq = 0;
  let stream: AbortController | undefined;
  const panel = workflowRunPanel(graph, run, {
    resume: async (stepId, resumeData) => {
      await post('/workflows/runs/{runId}/resume', { path: { runId }, body: { stepId, resumeData } });
      void follow();
    },
    cancel: async () => {
      await post('/workflows/runs/{runId}/cancel', { path: { runId } });
      stream?.abort();
    },
    /** A new run from `stepId` on: the steps before it keep this run's outputs. */
    rerunFrom: async (stepId) => {
      const rerun = await post('/workflows/runs/{runId}/rerun', { path: { runId }, body: { fromStep: stepId } });
      location.assign(runPath(rerun.runId));
    },
    runLink: runPage,
  });

  const follow = async () => {
    stream?.abort();
    const mine = new AbortController();
    stream = mine;
    await readApiStream(
      `/workflows/runs/${encodeURIComponent(runId)}/events?changes=true&lastSeq=${seq}`,
      (frame) => {
        const event = JSON.parse(frame.data) as { type: string; status?: string; snapshot?: Snapshot; stepId?: string; executionId?: string };
        if (frame.id) seq = Math.max(seq, Number(frame.id));
        if (event.type === 'workflow-snapshot' && event.snapshot) panel.update({ snapshot: event.snapshot, status: event.status });
        else if (event.type === 'workflow-step-execution' && event.stepId && event.executionId)
          panel.update({ step: { stepId: event.stepId, executionId: event.executionId } });
        else panel.update({});
      },
      mine.signal,
    ).catch((error) => panel.fail(String((error as Error).message)));
  };

  show(app, ...panel.elements);
  void follow();
}
