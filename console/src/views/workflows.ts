import { api, ApiError, post, type Call } from '../api';
import { alertBox, field, h, show, statusBadge, when } from '../dom';
import { readApiStream } from '../live';
import { FieldError, schemaForm, type SchemaForm } from '../schema-form';
import { schedulesSection } from './schedules';

/** What the console reads of a run's snapshot, which the API describes only as an object. */
interface Snapshot {
  status?: string;
  context?: Record<string, { status?: string; output?: unknown; error?: unknown } | unknown>;
  value?: Record<string, string>;
  suspended?: Record<string, { prompt?: string; metadata?: { resumeSchema?: object } }>;
  result?: unknown;
  error?: unknown;
}
interface Entry {
  type: string;
  id: string;
  toolId?: string;
  agentId?: string;
  duration?: number;
  loopType?: string;
  options?: { retries?: number | RetryOptions };
  steps?: Entry[];
  step?: Entry;
}

/** A tool step's retry policy as its definition writes it (docs/workflows.md, Retry policy). */
interface RetryOptions {
  attempts?: number;
  initialIntervalMs?: number;
  backoffCoefficient?: number;
  maximumIntervalMs?: number;
  nonRetryable?: string[];
}

const seconds = (ms: number) => `${ms / 1000} s`;

/** A tool step's retries in words: none when it has none. */
function retriesOf(retries: number | RetryOptions | undefined): string | null {
  const policy = typeof retries === 'number' ? { attempts: retries + 1 } : (retries ?? {});
  const attempts = policy.attempts ?? 1;
  if (attempts <= 1) return null;
  const first = policy.initialIntervalMs ?? 1000;
  const never = policy.nonRetryable?.length ? `; never on ${policy.nonRetryable.join(', ')}` : '';
  return `up to ${attempts} tries, ${seconds(first)} apart ×${policy.backoffCoefficient ?? 2}, at most ${seconds(Math.max(policy.maximumIntervalMs ?? 60_000, first))}${never}`;
}

const path = (slug: string) => `/workflows/${encodeURIComponent(slug)}`;
const runPath = (runId: string) => `/workflows/runs/${encodeURIComponent(runId)}`;

/** What the console reads of an input schema, which the API describes as any JSON Schema. */
type InputSchema = { properties?: Record<string, unknown>; required?: string[] } | undefined;

/** The place an INVALID_INPUT error names, under `prefix` (`inputs`, `resumeData`), relative to the form's value. */
const fieldUnder = (error: ApiError, prefix: string) => {
  const field = typeof error.details.field === 'string' ? error.details.field : '';
  return field === prefix ? '' : field.startsWith(`${prefix}.`) ? field.slice(prefix.length + 1) : null;
};

/** Sends a generated form's value, showing a refused field at its control. */
async function submitForm(form: SchemaForm, prefix: string, send: (value: unknown) => Promise<void>) {
  form.clearErrors();
  try {
    await send(form.read());
  } catch (error) {
    if (error instanceof FieldError) form.showError(error.path, error.message);
    else if (error instanceof ApiError) form.showError(fieldUnder(error, prefix) ?? '#', error.message);
    else form.showError('#', 'The request failed. Try again.');
  }
}

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

/** One workflow: its steps, a launch form generated from its input schema, and its schedules. */
export async function workflow(app: HTMLElement, slug: string) {
  const record = await api('/workflows/{slug}', { path: { slug } });
  const definition = JSON.parse(record.definition) as { inputSchema?: object; graph: Entry[] };
  document.querySelector('h1')!.textContent = record.name;
  const form = schemaForm(definition.inputSchema, 'input', 'Inputs (JSON)');
  const button = h('button', { type: 'submit' }, 'Launch');
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
    drawGraph(definition.graph, () => undefined),
    await schedulesSection(slug, definition.inputSchema),
  );
}

/** What a step is, in words. */
function kindOf(entry: Entry): string {
  if (entry.type === 'tool') return entry.toolId === 'human-input' ? 'human input' : `tool ${entry.toolId}`;
  if (entry.type === 'agent') return `agent ${entry.agentId?.split(':').pop()}`;
  if (entry.type === 'sleep') return `sleep ${Math.round((entry.duration ?? 0) / 1000)} s`;
  if (entry.type === 'loop') return `loop (${entry.loopType})`;
  return entry.type;
}

interface StepView {
  status: string;
  output?: unknown;
  executionId?: string;
}

/**
 * The step graph: the sequence top to bottom, the children of a parallel or conditional entry
 * side by side, a loop's or foreach's body inside it; each step with its status in words and,
 * once it has one, its output and the skill run it started.
 */
function drawGraph(graph: Entry[], stepOf: (id: string) => StepView | undefined, rerunFrom?: (stepId: string) => void): HTMLElement {
  const node = (entry: Entry, parent?: StepView): HTMLElement => {
    const step = stepOf(entry.id);
    const status = step?.status ?? (parent && ['success', 'failed'].includes(parent.status) ? 'skipped' : 'pending');
    const children = entry.steps ?? (entry.step ? [entry.step] : []);
    const retries = entry.type === 'tool' ? retriesOf(entry.options?.retries) : null;
    return h(
      'li',
      { class: `step status-${status}`, 'aria-label': `${entry.id}: ${status}` },
      h(
        'div',
        { class: 'node' },
        h('strong', {}, entry.id),
        ' ',
        h('span', { class: 'muted' }, kindOf(entry)),
        ' ',
        statusBadge(status),
        retries ? h('p', { class: 'muted' }, `Retries: ${retries}`) : null,
        // Top-level steps of a finished run only: a rerun starts at one of them.
        rerunFrom && !parent ? h('p', {}, h('button', { type: 'button', onclick: () => rerunFrom(entry.id) }, `Rerun from ${entry.id}`)) : null,
        step?.executionId ? h('p', {}, h('a', { href: `/runs/${encodeURIComponent(step.executionId)}` }, `Open the run of ${entry.id}`)) : null,
        step?.output !== undefined ? h('details', {}, h('summary', {}, `Output of ${entry.id}`), h('pre', {}, JSON.stringify(step.output, null, 2))) : null,
      ),
      children.length
        ? h(
            'ol',
            { class: entry.steps ? 'branches' : 'body', 'aria-label': `Inside ${entry.id}` },
            children.map((c) => node(c, step)),
          )
        : null,
    );
  };
  return h(
    'ol',
    { class: 'graph', 'aria-label': 'Step graph' },
    graph.map((e) => node(e)),
  );
}

/** A run: the graph lighting up as its steps go, the form of a suspended human-input step (Resume), Cancel. */
export async function workflowRun(app: HTMLElement, runId: string) {
  const { run } = await api('/workflows/runs/{runId}', { path: { runId } });
  const graph = await api('/workflows/{slug}', { path: { slug: run.workflowId } })
    .then((w) => (JSON.parse(w.definition) as { graph: Entry[] }).graph)
    .catch(() => [] as Entry[]);
  document.querySelector('h1')!.textContent = `${run.workflowId} run`;
  let snapshot = run.snapshot as Snapshot;
  let status = run.status;
  let seq = 0;
  const executions = new Map<string, string>();
  const statusText = h('span', { role: 'status' });
  const graphBox = h('div');
  const human = h('div');
  const result = h('div');
  const controls = h('div', { class: 'actions' });
  const notice = h('div');
  let drawnSuspended: string | undefined;
  let drawnFinished: boolean | undefined;

  const stepOf = (id: string): StepView | undefined => {
    const context = snapshot.context?.[id] as { status?: string; output?: unknown } | undefined;
    const open = snapshot.value?.[id];
    const state = open ?? context?.status;
    if (!state) return undefined;
    const output = context?.output;
    const fromOutput = output && typeof output === 'object' ? (output as { executionId?: unknown }).executionId : undefined;
    const executionId = executions.get(id) ?? (typeof fromOutput === 'string' ? fromOutput : undefined);
    return { status: state, output, ...(executionId ? { executionId } : {}) };
  };

  const draw = () => {
    show(statusText, statusBadge(status));
    const finished = ['success', 'failed', 'canceled'].includes(status);
    show(graphBox, drawGraph(graph, stepOf, finished ? rerunFrom : undefined));
    // Redrawn only when it changes, so the button is not replaced under the pointer.
    if (finished !== drawnFinished) show(controls, finished ? null : h('button', { type: 'button', onclick: cancel }, 'Cancel'));
    drawnFinished = finished;
    show(
      result,
      status === 'success' && snapshot.result !== undefined
        ? [h('h2', {}, 'Result'), h('pre', { tabindex: 0, 'aria-label': 'Result' }, JSON.stringify(snapshot.result, null, 2))]
        : null,
      status === 'failed' && snapshot.error ? alertBox(String(snapshot.error)) : null,
    );
    const suspended = status === 'suspended' ? Object.entries(snapshot.suspended ?? {}) : [];
    const key = suspended.map(([id]) => id).join(',');
    if (key === drawnSuspended) return;
    drawnSuspended = key;
    show(
      human,
      suspended.map(([stepId, s]) => resumeForm(stepId, s)),
    );
  };

  const resumeForm = (stepId: string, step: { prompt?: string; metadata?: { resumeSchema?: object } }) => {
    const form = schemaForm(step.metadata?.resumeSchema, `resume-${stepId}`, 'Answer (JSON)');
    return h(
      'form',
      {
        class: 'card',
        'aria-labelledby': `human-${stepId}`,
        onsubmit: (e: Event) => {
          e.preventDefault();
          void submitForm(form, 'resumeData', async (resumeData) => {
            await post('/workflows/runs/{runId}/resume', { path: { runId }, body: { stepId, resumeData } });
            status = 'running';
            draw();
            void follow();
          });
        },
      },
      h('h2', { id: `human-${stepId}` }, `Input needed: ${stepId}`),
      step.prompt ? h('p', {}, step.prompt) : null,
      form.element,
      h('button', { type: 'submit' }, 'Resume'),
    );
  };

  /** A new run from `stepId` on: the steps before it keep this run's outputs. */
  async function rerunFrom(stepId: string) {
    try {
      const rerun = await post('/workflows/runs/{runId}/rerun', { path: { runId }, body: { fromStep: stepId } });
      location.assign(runPath(rerun.runId));
    } catch (error) {
      show(notice, alertBox(error instanceof ApiError ? error.message : 'The run could not be rerun.'));
    }
  }

  async function cancel() {
    try {
      await post('/workflows/runs/{runId}/cancel', { path: { runId } });
      status = 'canceled';
      stream?.abort();
      draw();
    } catch (error) {
      show(notice, alertBox(error instanceof ApiError ? error.message : 'The run could not be cancelled.'));
    }
  }

  let stream: AbortController | undefined;
  const follow = async () => {
    stream?.abort();
    const mine = new AbortController();
    stream = mine;
    await readApiStream(
      `/workflows/runs/${encodeURIComponent(runId)}/events?changes=true&lastSeq=${seq}`,
      (frame) => {
        const event = JSON.parse(frame.data) as { type: string; status?: string; snapshot?: Snapshot; stepId?: string; executionId?: string };
        if (frame.id) seq = Math.max(seq, Number(frame.id));
        if (event.type === 'workflow-snapshot' && event.snapshot) [snapshot, status] = [event.snapshot, event.status ?? status];
        if (event.type === 'workflow-step-execution' && event.stepId && event.executionId) executions.set(event.stepId, event.executionId);
        draw();
      },
      mine.signal,
    ).catch((error) => show(notice, alertBox(String((error as Error).message))));
  };

  show(
    app,
    h('dl', { class: 'facts' }, h('dt', {}, 'Status'), h('dd', {}, statusText), h('dt', {}, 'Started'), h('dd', {}, when(run.createdAt))),
    controls,
    notice,
    human,
    h('h2', {}, 'Steps'),
    graphBox,
    result,
  );
  draw();
  void follow();
}
