import type { StreamedEvent } from './execution-stream';
import type { Principal } from '../auth/principal';
import type { Env } from '../env';
import { signStreamToken } from '../lib/signing';
import { streamHolderOf } from '../lib/stream-slots';

/** Spec 8: the control-plane URL is valid 5 minutes. */
export const CONTROL_URL_TTL_MS = 300_000;
/** The WebSocket path on `{control_url}`; the signed token in its query is the credential. */
export const CONTROL_PATH = '/control/ws';

/**
 * Control-plane messages (docs/executions.md: `{type, ...}` with one of the five names).
 * Execution messages carry the execution's `source` for the `/api/events` filter.
 */
export type ControlMessage =
  | { type: 'cache-invalidate'; resource: string; method: string; path: string }
  | { type: 'execution-started'; executionId: string; source: string; seq: number }
  | {
      type: 'execution-progress';
      executionId: string;
      source: string;
      seq: number;
      event: string;
      outputBlock?: { type: 'text'; text: string };
    }
  | { type: 'execution-completed' | 'execution-failed'; executionId: string; source: string; seq: number; stopReason: string; cost: number | null };

/** The execution whose events a channel relays. */
export interface RelayTarget {
  executionId: string;
  source: string;
}

/** What relaying a run carries from one batch of events to the next. */
export interface RelayState {
  /** Text deltas not sent yet. */
  text: string;
  /** From `execution.result`, for the completion message. */
  cost: number | null;
}

/**
 * The control messages for events of an execution's log (after its `session.status_running`). Text deltas are not sent one by
 * one: they are gathered in `pending` and sent as one output block when the text ends.
 */
export function controlMessagesFor(target: RelayTarget, events: StreamedEvent[], pending: RelayState): ControlMessage[] {
  const base = { executionId: target.executionId, source: target.source };
  const out: ControlMessage[] = [];
  for (const event of events) {
    if (event.type === 'agent.message') {
      pending.text += ((event.payload.content as { text?: string }[] | undefined) ?? []).map((c) => c.text ?? '').join('');
      continue;
    }
    if (pending.text) {
      out.push({ type: 'execution-progress', ...base, seq: event.seq - 1, event: 'agent.message', outputBlock: { type: 'text', text: pending.text } });
      pending.text = '';
    }
    if (event.type === 'session.status_running') out.push({ type: 'execution-started', ...base, seq: event.seq });
    else if (event.type === 'execution.result') pending.cost = typeof event.payload.cost === 'number' ? event.payload.cost : null;
    else if (event.type === 'session.status_idle') {
      const stopReason = (event.payload.stop_reason as { type?: string } | undefined)?.type ?? 'end_turn';
      out.push({ type: stopReason === 'error' ? 'execution-failed' : 'execution-completed', ...base, seq: event.seq, stopReason, cost: pending.cost });
    } else if (event.type !== 'user.message') out.push({ type: 'execution-progress', ...base, seq: event.seq, event: event.type });
  }
  return out;
}

/** The `/api/events` view of an execution message (spec 6.3 `execution-state`). */
export function executionState(message: Exclude<ControlMessage, { type: 'cache-invalidate' }>) {
  const status =
    message.type === 'execution-failed'
      ? 'failed'
      : message.type === 'execution-completed'
        ? message.stopReason === 'end_turn'
          ? 'completed'
          : 'idle'
        : 'working';
  const { type, ...rest } = message;
  return { type: 'execution-state' as const, change: type.slice('execution-'.length), status, ...rest };
}

/** GET /events/subscribe-url: a signed WebSocket URL for the caller's workspace channel, relative to the service's origin. */
export async function createSubscribeUrl(principal: Principal, secret: string) {
  const token = await signStreamToken(
    secret,
    'control-channel',
    { subject: principal.workspaceId, workspaceId: principal.workspaceId, holder: streamHolderOf(principal) },
    CONTROL_URL_TTL_MS,
  );
  return { url: `${CONTROL_PATH}?token=${encodeURIComponent(token)}`, expiresInMs: CONTROL_URL_TTL_MS };
}

/** Sends messages to a workspace's channel; the channel being unreachable never fails the caller. */
export async function publish(env: Env, workspaceId: string, messages: ControlMessage[]): Promise<void> {
  if (messages.length === 0) return;
  try {
    await env.WORKSPACE_CHANNEL.getByName(workspaceId).publish(messages);
  } catch (error) {
    console.error(JSON.stringify({ level: 'warn', workspaceId, message: 'control-plane publish failed', error: String(error) }));
  }
}
