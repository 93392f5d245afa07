import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../workers/env';
import { type ControlMessage, executionState } from '../workers/services/control-plane';

/** Comment frames keep idle SSE connections (and proxies) from timing out. */
const KEEP_ALIVE_MS = 15_000;
const encoder = new TextEncoder();

interface SseSubscriber {
  writer: WritableStreamDefaultWriter<Uint8Array>;
  /** `sources` filter of /api/events: execution sources to pass, or null for all. */
  sources: Set<string> | null;
}

/**
 * One per workspace, addressed by the workspace id: the control plane (spec 6.2, 6.3).
 *
 * WebSockets use the hibernation API: sockets are accepted with `ctx.acceptWebSocket`, so the
 * object may be evicted between messages while clients stay connected, and `publish` finds
 * them again with `ctx.getWebSockets()`. The text `ping` is answered `pong` by the runtime
 * (`setWebSocketAutoResponse`) without waking the object. No state is kept besides the sockets.
 *
 * `/api/events` subscribers (SSE) are held in memory while their stream is open; they keep the
 * object awake, and an eviction drops them (clients reconnect).
 *
 * The URL is verified by the Worker before the upgrade reaches this object.
 */
export class WorkspaceChannel extends DurableObject<Env> {
  private readonly sse = new Set<SseSubscriber>();
  private keepAlive: ReturnType<typeof setInterval> | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair('ping', 'pong'));
  }

  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get('upgrade')?.toLowerCase() === 'websocket') {
      const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
      this.ctx.acceptWebSocket(server);
      return new Response(null, { status: 101, webSocket: client });
    }
    const sources = new URL(request.url).searchParams.get('sources');
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
    const subscriber: SseSubscriber = {
      writer: writable.getWriter(),
      sources: sources ? new Set(sources.split(',').map((s) => s.trim()).filter(Boolean)) : null,
    };
    void subscriber.writer.write(encoder.encode(': connected\n\n'));
    this.subscribe(subscriber);
    return new Response(readable, {
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        // wrangler dev buffers SSE unless the response declares no content encoding.
        'content-encoding': 'identity',
      },
    });
  }

  /** Sends messages to every socket, and execution messages to matching /api/events streams. Answers how many sockets are open. */
  publish(messages: ControlMessage[]): number {
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
      if (message.type === 'cache-invalidate') continue;
      const frame = encoder.encode(`event: execution-state\ndata: ${JSON.stringify(executionState(message))}\n\n`);
      for (const s of this.sse) {
        if (s.sources && !s.sources.has(message.source)) continue;
        s.writer.write(frame).catch(() => this.unsubscribe(s));
      }
    }
    return sockets.length;
  }

  override webSocketMessage(): void {
    // Clients only ping (answered by the runtime); anything else is ignored.
  }

  override webSocketClose(ws: WebSocket, code: number, reason: string): void {
    try {
      ws.close(code, reason);
    } catch {
      // already closed
    }
  }

  private subscribe(subscriber: SseSubscriber) {
    this.sse.add(subscriber);
    subscriber.writer.closed.catch(() => undefined).finally(() => this.unsubscribe(subscriber));
    this.keepAlive ??= setInterval(() => {
      for (const s of this.sse) s.writer.write(encoder.encode(': keep-alive\n\n')).catch(() => this.unsubscribe(s));
    }, KEEP_ALIVE_MS);
  }

  private unsubscribe(subscriber: SseSubscriber) {
    this.sse.delete(subscriber);
    if (this.sse.size === 0 && this.keepAlive !== undefined) {
      clearInterval(this.keepAlive);
      this.keepAlive = undefined;
    }
  }
}
