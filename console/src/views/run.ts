import { api, ApiError, post } from '../api';
import { alertBox, field, h, show, statusBadge } from '../dom';
import { onThisOrigin } from '../live';
import { artifactsSection } from './artifacts';
import { outputRegion, type Part } from '../run-output';

/** What the view has seen of a run, kept per tab so a reload goes on from the last sequence. */
interface Seen {
  seq: number;
  parts: Part[];
  /** Every event by sequence and type: the run's timeline. */
  timeline: [number, string][];
  working: boolean;
  stopReason?: string;
  tokens?: { input: number; output: number };
  cost?: number;
}

interface StreamEvent {
  type: string;
  payload: Record<string, unknown>;
}

const textOf = (payload: Record<string, unknown>) =>
  ((payload.content as { type: string; text?: string }[] | undefined) ?? []).map((c) => c.text ?? '').join('');

/**
 * A run as it happens: the answer streams into the Output region from the signed SSE stream; the
 * status, tokens and cost; Interrupt while it works; a follow-up box when it is idle. Reloading
 * resumes the stream after the last sequence this tab saw.
 */
export async function run(app: HTMLElement, id: string) {
  const key = `run:${id}`;
  const status = await api('/executions/{id}/status', { path: { id } });
  document.querySelector('h1')!.textContent = status.skillName;
  const seen: Seen = JSON.parse(sessionStorage.getItem(key) ?? 'null') ?? { seq: 0, parts: [], timeline: [], working: status.status === 'working' };
  const save = () => sessionStorage.setItem(key, JSON.stringify(seen));

  const statusText = h('span', { role: 'status' });
  const tokens = h('span');
  const cost = h('span');
  const output = outputRegion();
  const controls = h('div', { class: 'controls' });
  const notice = h('div');
  const timeline = h('ol', { class: 'timeline', 'aria-label': 'Event timeline' });
  const drawEvent = ([seq, type]: [number, string]) => timeline.append(h('li', {}, h('span', { class: 'muted' }, `#${seq} `), type));
  const files = artifactsSection(id);
  // The files are listed when the page opens and again when a turn it watched working ends; a run
  // that had ended before the page opened (its replay ends with an idle too) is listed once.
  let watching = status.status === 'working';
  let drawnWorking: boolean | undefined;

  const addPart = (part: Part) => {
    const last = seen.parts.at(-1);
    if (part.kind === 'text' && last?.kind === 'text') last.text += part.text;
    else seen.parts.push(part);
    output.drawPart(part);
  };

  const drawState = () => {
    show(statusText, statusBadge(seen.working ? 'working' : 'idle'), seen.stopReason ? ` (${seen.stopReason.replace('_', ' ')})` : '');
    tokens.textContent = seen.tokens ? `${seen.tokens.input} in, ${seen.tokens.output} out` : '–';
    cost.textContent = seen.cost === undefined ? '–' : `${seen.cost} credits`;
    // Redrawn only when the state changes, so a button is not replaced under the pointer.
    if (drawnWorking === seen.working) return;
    drawnWorking = seen.working;
    show(controls, seen.working ? h('button', { type: 'button', onclick: interrupt }, 'Interrupt') : [followUp(), again()]);
  };

  const onEvent = (event: StreamEvent) => {
    const p = event.payload ?? {};
    if (event.type === 'agent.message') addPart({ kind: 'text', text: textOf(p) });
    else if (event.type === 'user.message') addPart({ kind: 'you', text: textOf(p) });
    else if (event.type === 'agent.tool_use') addPart({ kind: 'tool', text: String(p.label ?? p.name ?? 'tool'), detail: JSON.stringify(p, null, 2) });
    else if (event.type === 'user.interrupt') addPart({ kind: 'info', text: 'Interrupted.' });
    else if (event.type === 'session.status_running') [seen.working, seen.stopReason] = [true, undefined];
    else if (event.type === 'session.status_idle') {
      [seen.working, seen.stopReason] = [false, (p.stop_reason as { type?: string } | undefined)?.type];
      output.finishAnswer();
    } else if (event.type === 'execution.result') {
      const usage = p.tokenUsage as { input_tokens?: number; output_tokens?: number; inputTokens?: number; outputTokens?: number } | undefined;
      seen.cost = Number(p.cost ?? 0);
      if (usage) seen.tokens = { input: usage.input_tokens ?? usage.inputTokens ?? 0, output: usage.output_tokens ?? usage.outputTokens ?? 0 };
    }
    drawState();
  };

  let source: EventSource | undefined;
  let retryMs = 1000;
  const stream = async () => {
    source?.close();
    const { sseUrl } = await api('/executions/{id}/stream-token', { path: { id } });
    const url = new URL(onThisOrigin(sseUrl));
    url.searchParams.set('lastSeq', String(seen.seq));
    const es = new EventSource(url);
    source = es;
    es.onmessage = (message) => {
      retryMs = 1000;
      const seq = Number(message.lastEventId);
      if (seq <= seen.seq) return;
      seen.seq = seq;
      const event = JSON.parse(message.data) as StreamEvent;
      seen.timeline.push([seq, event.type]);
      drawEvent([seq, event.type]);
      onEvent(event);
      save();
      if (event.type === 'session.status_idle') {
        es.close();
        if (watching) void files.refresh();
      }
    };
    // A dropped connection reconnects by itself to the same URL, which expires five minutes after
    // it was signed: once the browser gives up on it (a 401 is final for EventSource) while the
    // run still works, a fresh URL goes on from the last event seen. An ended run answers 204.
    es.onerror = () => {
      if (es.readyState !== EventSource.CLOSED || source !== es || !seen.working) return;
      setTimeout(() => {
        if (source === es) stream().catch((error) => show(notice, alertBox(error instanceof ApiError ? error.message : 'The run’s events could not be read.')));
      }, retryMs);
      retryMs = Math.min(retryMs * 2, 30_000);
    };
  };

  async function interrupt() {
    try {
      await post('/executions/{id}/events', { path: { id }, body: { events: [{ type: 'user.interrupt' }] } });
    } catch (error) {
      show(notice, alertBox(error instanceof ApiError ? error.message : 'The run could not be interrupted.'));
    }
  }

  /** Rerun (the same lineage) or Remix (a new one) with new instructions; the new run opens. */
  function again() {
    const box = h('textarea', { id: 'again-input', rows: 3, required: true });
    return h(
      'form',
      {
        'aria-labelledby': 'again-h',
        onsubmit: async (e: Event) => {
          e.preventDefault();
          const kind = ((e as SubmitEvent).submitter as HTMLButtonElement | null)?.value === 'remix' ? 'remix' : 'rerun';
          try {
            const started = await post(`/executions/{id}/${kind}`, { path: { id }, body: { input: box.value } });
            location.assign(`/runs/${encodeURIComponent(started.executionId)}`);
          } catch (error) {
            show(notice, alertBox(error instanceof ApiError ? error.message : 'The run could not start.'));
          }
        },
      },
      h('h2', { id: 'again-h' }, 'Run it again'),
      field('New instructions', box, 'Rerun keeps this run’s lineage (its trace); Remix starts a new one.'),
      h('button', { type: 'submit', value: 'rerun' }, 'Rerun'),
      h('button', { type: 'submit', value: 'remix' }, 'Remix'),
    );
  }

  function followUp() {
    const box = h('textarea', { id: 'follow-up', rows: 3, required: true });
    return h(
      'form',
      {
        class: 'follow-up',
        onsubmit: async (e: Event) => {
          e.preventDefault();
          show(notice);
          try {
            await post('/executions/{id}/events', { path: { id }, body: { events: [{ type: 'user.message', content: [{ type: 'text', text: box.value }] }] } });
            seen.working = watching = true;
            drawState();
            await stream();
          } catch (error) {
            show(notice, alertBox(error instanceof ApiError ? error.message : 'The message could not be sent.'));
          }
        },
      },
      field('Follow-up', box),
      h('button', { type: 'submit' }, 'Send'),
    );
  }

  show(
    app,
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'Status'),
      h('dd', {}, statusText),
      h('dt', {}, 'Tokens'),
      h('dd', {}, tokens),
      h('dt', {}, 'Cost'),
      h('dd', {}, cost),
    ),
    output.element,
    files.element,
    notice,
    controls,
    h('details', {}, h('summary', {}, 'Event timeline'), timeline),
    h(
      'p',
      { class: 'muted' },
      h('a', { href: `/skills/${encodeURIComponent(status.skillSlug)}/run` }, `Run ${status.skillName} again`),
      ' · ',
      h('a', { href: '/runs' }, 'All runs'),
    ),
  );
  for (const part of seen.parts) output.drawPart(part);
  if (!seen.working) output.finishAnswer();
  seen.timeline.forEach(drawEvent);
  drawState();
  await Promise.all([stream(), files.refresh()]);
}
