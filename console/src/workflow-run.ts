import { ApiError } from './api';
import { alertBox, h, show, statusBadge, when, type Kid } from './dom';
import { FieldError, schemaForm, type SchemaForm } from './schema-form';

/** What the console reads of a run's snapshot, which the API describes only as an object. */
export interface Snapshot {
  status?: string;
  context?: Record<string, { status?: string; output?: unknown; error?: unknown } | unknown>;
  value?: Record<string, string>;
  suspended?: Record<string, { prompt?: string; metadata?: { resumeSchema?: object } }>;
  result?: unknown;
  error?: unknown;
}
export interface Entry {
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

/** The place an INVALID_INPUT error names, under `prefix` (`inputs`, `resumeData`), relative to the form's value. */
const fieldUnder = (error: ApiError, prefix: string) => {
  const field = typeof error.details.field === 'string' ? error.details.field : '';
  return field === prefix ? '' : field.startsWith(`${prefix}.`) ? field.slice(prefix.length + 1) : null;
};

/** Sends a generated form's value, showing a refused field at its control. */
export async function submitForm(form: SchemaForm, prefix: string, send: (value: unknown) => Promise<void>) {
  form.clearErrors();
  try {
    await send(form.read());
  } catch (error) {
    if (error instanceof FieldError) form.showError(error.path, error.message);
    else if (error instanceof ApiError) form.showError(fieldUnder(error, prefix) ?? '#', error.message);
    else form.showError('#', 'The request failed. Try again.');
  }
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

/** How a step's skill run is reached: a link to the console's run page, or the run view's own. */
export type RunLink = (stepId: string, executionId: string) => Kid;

/**
 * The step graph: the sequence top to bottom, the children of a parallel or conditional entry
 * side by side, a loop's or foreach's body inside it; each step with its status in words and,
 * once it has one, its output and the skill run it started.
 */
export function drawGraph(graph: Entry[], stepOf: (id: string) => StepView | undefined, runLink: RunLink, rerunFrom?: (stepId: string) => void): HTMLElement {
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
        step?.executionId ? h('p', {}, runLink(entry.id, step.executionId)) : null,
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

/** What a run panel does through its surface: the console's /api/v1 calls, or the run view's tool calls. */
export interface RunActions {
  /** Resumes a suspended human-input step with the person's answer; an ApiError is shown at the form. */
  resume: (stepId: string, resumeData: unknown) => Promise<void>;
  cancel?: () => Promise<void>;
  rerunFrom?: (stepId: string) => Promise<void>;
  runLink: RunLink;
}

/** The part of a run record the panel reads. */
interface RunState {
  status: string;
  snapshot: unknown;
  createdAt: string;
}

const FINISHED = ['success', 'failed', 'canceled'];

/**
 * A workflow run as the console's run page and the run view (an MCP App) show it: its status, the
 * step graph lighting up as its steps go, the form of each suspended human-input step (Resume),
 * Cancel while it runs, its result. `update` draws a newer state of the run however it arrived.
 */
export function workflowRunPanel(graph: Entry[], run: RunState, actions: RunActions) {
  let snapshot = run.snapshot as Snapshot;
  let status = run.status;
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

  /** Does `work`, showing its failure in the notice. */
  const attempt = async (work: () => Promise<void>, fallback: string) => {
    try {
      await work();
    } catch (error) {
      show(notice, alertBox(error instanceof ApiError ? error.message : fallback));
    }
  };
  const cancel = () =>
    attempt(async () => {
      await actions.cancel!();
      status = 'canceled';
      draw();
    }, 'The run could not be cancelled.');
  const rerunFrom = actions.rerunFrom && ((stepId: string) => void attempt(() => actions.rerunFrom!(stepId), 'The run could not be rerun.'));

  const resumeForm = (stepId: string, step: { prompt?: string; metadata?: { resumeSchema?: object } }) => {
    const form = schemaForm(step.metadata?.resumeSchema, `resume-${stepId}`, 'Answer (JSON)');
    // Sent from the button's click (which Enter in a field makes too), not the form's submit
    // event: a host may frame the run view without `allow-forms`, which blocks submitting (and
    // its event) but not clicks. The browser's own checks of the fields still run first.
    const resume = (e: Event) => {
      e.preventDefault();
      if (!element.reportValidity()) return;
      void submitForm(form, 'resumeData', async (resumeData) => {
        await actions.resume(stepId, resumeData);
        status = 'running';
        draw();
      });
    };
    const element = h(
      'form',
      { class: 'card', 'aria-labelledby': `human-${stepId}` },
      h('h2', { id: `human-${stepId}` }, `Input needed: ${stepId}`),
      step.prompt ? h('p', {}, step.prompt) : null,
      form.element,
      h('button', { type: 'submit', onclick: resume }, 'Resume'),
    );
    return element;
  };

  function draw() {
    show(statusText, statusBadge(status));
    const finished = FINISHED.includes(status);
    show(graphBox, drawGraph(graph, stepOf, actions.runLink, finished ? rerunFrom : undefined));
    // Redrawn only when it changes, so the button is not replaced under the pointer.
    if (finished !== drawnFinished) show(controls, finished || !actions.cancel ? null : h('button', { type: 'button', onclick: cancel }, 'Cancel'));
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
  }

  const elements: Kid[] = [
    h('dl', { class: 'facts' }, h('dt', {}, 'Status'), h('dd', {}, statusText), h('dt', {}, 'Started'), h('dd', {}, when(run.createdAt))),
    controls,
    notice,
    human,
    h('h2', {}, 'Steps'),
    graphBox,
    result,
  ];
  draw();
  return {
    elements,
    /** Whether the run has finished (it changes no more). */
    finished: () => FINISHED.includes(status),
    status: () => status,
    /** A newer state of the run: its snapshot and status, or the skill run a step started. */
    update(next: { snapshot?: unknown; status?: string; step?: { stepId: string; executionId: string } }) {
      if (next.snapshot) snapshot = next.snapshot as Snapshot;
      if (next.status) status = next.status;
      if (next.step) executions.set(next.step.stepId, next.step.executionId);
      draw();
    },
    /** Shows a failure to follow the run. */
    fail: (message: string) => show(notice, alertBox(message)),
  };
}
