import { api, apiHeaders, fetchPolitely } from './api';

/**
 * Signed URLs are minted with the service's public origin; the console opens them on its own
 * origin (the CSP allows no other), so only their path and query are kept.
 */
export const onThisOrigin = (url: string, scheme: 'http' | 'ws' = 'http') => {
  const { pathname, search } = new URL(url, location.href);
  const secure = location.protocol === 'https:';
  const base = scheme === 'ws' ? `${secure ? 'wss' : 'ws'}://${location.host}` : location.origin;
  return `${base}${pathname}${search}`;
};

export interface ControlEvent {
  type: string;
  executionId: string;
}

/** The workspace's control-plane WebSocket; a fresh signed URL for every reconnect. */
export function openControlChannel(onEvent: (event: ControlEvent) => void) {
  let retry = 1000;
  const connect = async () => {
    try {
      const { url } = await api('/events/subscribe-url');
      const socket = new WebSocket(onThisOrigin(url, 'ws'));
      socket.onopen = () => (retry = 1000);
      socket.onmessage = (message) => onEvent(JSON.parse(String(message.data)) as ControlEvent);
      socket.onclose = () => reconnect();
    } catch {
      reconnect();
    }
  };
  const reconnect = () => {
    setTimeout(connect, retry);
    retry = Math.min(retry * 2, 30_000);
  };
  void connect();
}

export interface SseFrame {
  id: string | undefined;
  data: string;
}

/**
 * An SSE stream of /api/v1 read with fetch (EventSource cannot send the CSRF header the cookie
 * session needs). Resolves when the server ends the stream or `signal` aborts it.
 */
export async function readApiStream(path: string, onFrame: (frame: SseFrame) => void, signal: AbortSignal) {
  const res = await fetchPolitely(`/api/v1${path}`, {
    headers: { ...apiHeaders(), accept: 'text/event-stream' },
    credentials: 'same-origin',
    signal,
  });
  if (!res.ok || !res.body) throw new Error(`The stream could not be opened (${res.status})`);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value.replace(/\r\n?/g, '\n');
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let id: string | undefined;
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('id:')) id = line.slice(3).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        }
        if (data.length) onFrame({ id, data: data.join('\n') });
      }
    }
  } catch (error) {
    if (!signal.aborted) throw error;
  }
}
