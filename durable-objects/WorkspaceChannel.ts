import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../workers/env';
import { SseSubscribers, sseStream, type SseWriter } from '../workers/lib/sse';
import { followExecutionStream } from '../workers/services/execution-stream';
import { type ControlMessage, controlMessagesFor, executionState, type RelayState, type RelayTarget } from '../workers/services/control-plane';
import { now } from '../workers/lib/clock';
import { releaseStreamSlot, renewStreamSlot, SLOT_RENEW_MS, STREAM_SLOT_HEADER, type StreamSlot } from '../workers/lib/stream-slots';

const encoder = new TextEncoder();

interface SseSubscriber {
  writer: SseWriter;
  /** `changes`: the workspace's `cache-invalidate` messages (an MCP listen stream); `executions`: /api/events. */
  kind: 'changes' | 'executions';
  /** `sources` filter of /api/events: execution sources to pass, or null for all. */
  sources: Set<string> | null;
}

/**
 * One per workspace, addressed by the workspace id: the control plane (spec 6.2, 6.3).
 *
 * WebSockets use the hibernation API: sockets are accepted with `ctx.acceptWebSocket`, so the
 * object may be evicted between messages while clients stay connected, and `publish` finds
 * them again with `ctx.getWebSockets()`. The text `ping` is answered `pong` by the runtime
 * (`setWebSocketAutoResponse`) without waking the object. No state is kept besides the sockets,
 * each with its stream slot attached (the WebSocket slot of the credential that asked for the
 * URL, taken by the Worker): released when the socket closes, renewed by an alarm while any
 * socket is open, so a slot outlives a lost socket by one lease at most.
 *
 * `/api/events` subscribers and MCP `subscriptions/listen` streams (SSE, the latter hearing only
 * `cache-invalidate`) are held in memory while their stream is open; they keep the object awake,
 * and an eviction drops them (clients reconnect).
 *
 * Execution messages: the execution's object publishes `execution-started` once a new run's
 * first model request is under way; if anyone is listening, the channel then follows that run's
 * own event stream (the ExecutionSession's SSE, from the started event on) and turns its events
 * into progress and completion messages. The object makes no other calls here while it runs,
 * and a workspace nobody watches costs nothing; a listener that connects mid-run hears from the
 * next run on.
 *
 * The URL is verified by the Worker before the upgrade reaches this object.
 */
export class WorkspaceChannel extends DurableObject<Env> {
  private readonly sse = new SseSubscribers<SseSubscriber>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair('ping', 'pong'));
  }

  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get('upgrade')?.toLowerCase() === 'websocket') {
      const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
      this.ctx.acceptWebSocket(server);
      server.serializeAttachment(JSON.parse(request.headers.get(STREAM_SLOT_HEADER)!) as StreamSlot);
      if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(now() + SLOT_RENEW_MS);
      return new Response(null, { status: 101, webSocket: client });
    }
    const url = new URL(request.url);
    const sources = url.searchParams.get('sources');
    const { writer, response } = sseStream();
    const subscriber: SseSubscriber = {
      writer,
      kind: url.pathname === '/changes' ? 'changes' : 'executions',
      sources: sources
        ? new Set(
            sources
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean),
          )
        : null,
    };
    void subscriber.writer.write(encoder.encode(': connected\n\n'));
    this.sse.add(subscriber, request.signal);
    return response;
  }

  /** Sends messages to every socket and /api/events stream; a started run is followed while anyone listens. Answers how many sockets are open. */
  publish(messages: ControlMessage[]): number {
    const sockets = this.send(messages);
    // Listen streams hear only changes: a run is followed for sockets and /api/events streams.
    if (sockets > 0 || [...this.sse].some((s) => s.kind === 'executions')) {
      for (const m of messages) if (m.type === 'execution-started') this.ctx.waitUntil(this.relay(m, m.seq));
    }
    return sockets;
  }

  private send(messages: ControlMessage[]): number {
    const sockets = this.ctx.getWebSockets();
    for (const message of messages) {
      const text = JSON.stringify(message);
      for (const ws of sockets) {
        try {
          ws.send(text);
        } catch {
          // A socket closing as we send: its close handler cleans up.
        }
      }
      if (message.type === 'cache-invalidate') {
        const change = encoder.encode(`event: cache-invalidate\ndata: ${text}\n\n`);
        for (const s of this.sse) if (s.kind === 'changes') this.sse.write(s, change);
        continue;
      }
      const frame = encoder.encode(`event: execution-state\ndata: ${JSON.stringify(executionState(message))}\n\n`);
      for (const s of this.sse) {
        if (s.kind !== 'executions' || (s.sources && !s.sources.has(message.source))) continue;
        this.sse.write(s, frame);
      }
    }
    return sockets.length;
  }

  /** Follows a run's event stream after `afterSeq` (the shared reader, reopened if the run's object drops it) and sends its messages until the run is idle. */
  private async relay(target: RelayTarget, afterSeq: number): Promise<void> {
    const pending: RelayState = { text: '', cost: null };
    let idle = false;
    await followExecutionStream(this.env, target.executionId, {
      afterSeq,
      signal: new AbortController().signal,
      onEvent: (event) => {
        idle ||= event.type === 'session.status_idle';
        this.send(controlMessagesFor(target, [event], pending));
      },
      // 204: the run ended and everything after `afterSeq` was already sent.
      ended: async (finished) => finished || idle,
    });
  }

  override webSocketMessage(): void {
    // Clients only ping (answered by the runtime); anything else is ignored.
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    try {
      ws.close(code, reason);
    } catch {
      // already closed
    }
    await this.releaseSlotOf(ws);
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    await this.releaseSlotOf(ws);
  }

  /**
   * Its workspace is being deleted (workers/services/workspace-erasure.ts): every socket and
   * event stream is closed, their slots given back, and the renewal alarm goes with the storage.
   */
  async erase(): Promise<void> {
    for (const ws of this.ctx.getWebSockets()) {
      try {
        ws.close(1008, 'This workspace was deleted');
      } catch {
        // already closed
      }
      await this.releaseSlotOf(ws);
    }
    for (const s of this.sse) {
      void s.writer.close().catch(() => undefined);
      this.sse.delete(s);
    }
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
  }

  /** Renews the slots of the open sockets; a socket whose slot was lost is closed (its client reconnects, taking a slot again). */
  override async alarm(): Promise<void> {
    const sockets = this.ctx.getWebSockets();
    await Promise.all(
      sockets.map(async (ws) => {
        const slot = ws.deserializeAttachment() as StreamSlot | null;
        if (slot && !(await renewStreamSlot(this.env, slot))) ws.close(1013, 'This socket’s slot expired: connect again');
      }),
    );
    if (sockets.length > 0) await this.ctx.storage.setAlarm(now() + SLOT_RENEW_MS);
  }

  private async releaseSlotOf(ws: WebSocket) {
    const slot = ws.deserializeAttachment() as StreamSlot | null;
    if (slot) await releaseStreamSlot(this.env, slot);
  }
}
