import { api } from './api';

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
      const { url } = await api<{ url: string }>('/events/subscribe-url');
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
