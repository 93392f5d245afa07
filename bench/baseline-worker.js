// The baseline: a bare Worker that streams N Server-Sent Events as fast as workerd allows,
// with the same frame shape as an execution stream; and at /json, a JSON document shaped like the
// memory document (`content` of `?chars=` characters). What the service adds is measured against it.
// The floors answer the same document after one of the calls a keyed read makes, with nothing
// of the service around them: /floor/object (a Durable Object call that does nothing),
// /floor/counter (one that counts the request in its storage, as a rate limit must),
// /floor/d1 (a D1 read) and /floor/counter-d1 (both, one after the other); and
// /floor/counter-document, one object call that counts and answers the document from its own
// storage: the least a keyed read can cost here with exact counting. /relay?to= POSTs a model
// request to `to` and answers its event stream as it comes: the least a run on a hosted model
// can cost here before its first words. /relay?to=&frames=1 does it in an object that parses the
// model's events and writes a frame of each, as a run does; with &store=1 it also stores each
// event as a row before its frame (so the frame waits for its commit, as a run's does).
import { DurableObject } from 'cloudflare:workers';
import { createParser } from 'eventsource-parser';

const encoder = new TextEncoder();
const askModel = (to) => fetch(to, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"stream":true}' });
const sse = (body) => new Response(body, { headers: { 'content-type': 'text/event-stream', 'content-encoding': 'identity' } });

/** A counter in synchronous storage, the way the service's rate limits count (durable-objects/RateLimiter.ts, HitCounter). */
export class Floor extends DurableObject {
  nothing() {
    return true;
  }

  /** Counts like count(), then answers the document from its own storage: one call for both. */
  countAndRead(windowMs, chars) {
    this.count(windowMs);
    const kv = this.ctx.storage.kv;
    let document = kv.get('document');
    if (document?.content.length !== chars) {
      document = { content: 'x'.repeat(chars), updatedAt: new Date().toISOString() };
      kv.put('document', document);
    }
    return document;
  }

  /** The relay with frames: every model event parsed and written as its own frame, stored first with `store`. */
  async fetch(request) {
    const url = new URL(request.url);
    const store = url.searchParams.get('store') === '1';
    const sql = this.ctx.storage.sql;
    if (store) sql.exec('CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY, type TEXT NOT NULL, payload TEXT NOT NULL, at INTEGER NOT NULL)');
    this.seq ??= store ? (sql.exec('SELECT MAX(seq) AS seq FROM events').one().seq ?? 0) : 0;
    const answer = await askModel(url.searchParams.get('to'));
    const { readable, writable } = new IdentityTransformStream();
    const writer = writable.getWriter();
    const relay = async () => {
      const reader = answer.body.getReader();
      const decoder = new TextDecoder();
      const parsed = [];
      const parser = createParser({ onEvent: (message) => parsed.push(message) });
      for (let next = await reader.read(); !next.done; next = await reader.read()) {
        parser.feed(decoder.decode(next.value, { stream: true }));
        for (const message of parsed.splice(0)) {
          const text = JSON.parse(message.data).delta?.text;
          const type = text === undefined ? message.event : 'agent.message';
          const payload = JSON.stringify(text === undefined ? {} : { content: [{ type: 'text', text }] });
          const seq = ++this.seq;
          if (store) sql.exec('INSERT INTO events (seq, type, payload, at) VALUES (?, ?, ?, ?)', seq, type, payload, Date.now());
          void writer.write(encoder.encode(`id: ${seq}\ndata: {"type":${JSON.stringify(type)},"payload":${payload}}\n\n`));
        }
      }
      await writer.close();
    };
    this.ctx.waitUntil(relay());
    return sse(readable);
  }

  count(windowMs) {
    // As the service's HitCounter: the last written count is held in memory, the window written only when it changes.
    const kv = this.ctx.storage.kv;
    const t = Date.now();
    const window = t - (t % windowMs);
    this.hits ??= { window: kv.get('window'), count: kv.get('count') ?? 0 };
    const count = this.hits.window === window ? this.hits.count : 0;
    if (this.hits.window !== window) kv.put('window', window);
    kv.put('count', count + 1);
    this.hits = { window, count: count + 1 };
    return true;
  }
}

const document = (chars) => Response.json({ content: 'x'.repeat(chars), updatedAt: new Date().toISOString() });

const floors = {
  '/floor/object': (env) => env.FLOOR.getByName('bench').nothing(),
  '/floor/counter': (env) => env.FLOOR.getByName('bench').count(60_000),
  '/floor/d1': (env) => env.DB.prepare('SELECT ?1 AS content').bind('x').first(),
  '/floor/counter-document': (env, chars) => env.FLOOR.getByName('bench').countAndRead(60_000, chars),
  '/floor/counter-d1': async (env) => {
    await floors['/floor/counter'](env);
    return floors['/floor/d1'](env);
  },
};

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const chars = Number(url.searchParams.get('chars') ?? 0);
    if (url.pathname === '/json') return document(chars);
    if (url.pathname === '/relay') {
      if (url.searchParams.get('frames')) return env.FLOOR.getByName(url.searchParams.get('store') ? 'relay-stored' : 'relay').fetch(request);
      return sse((await askModel(url.searchParams.get('to'))).body);
    }
    const floor = floors[url.pathname];
    if (floor) {
      const stored = await floor(env, chars);
      // The one-call floor answers the document its object read; the others build it here.
      return url.pathname === '/floor/counter-document' ? Response.json(stored) : document(chars);
    }
    const n = Number(url.searchParams.get('n') ?? 100);
    // ?byte=1: workerd's own byte stream, which the service's streams use, instead of a JavaScript TransformStream.
    const { readable, writable } = url.searchParams.get('byte') ? new IdentityTransformStream() : new TransformStream();
    const writer = writable.getWriter();
    (async () => {
      for (let seq = 1; seq <= n; seq++) {
        const type = seq === n ? 'session.status_idle' : 'agent.message';
        await writer.write(encoder.encode(`id: ${seq}\ndata: ${JSON.stringify({ type, payload: { content: [{ type: 'text', text: 'word ' }] } })}\n\n`));
      }
      await writer.close();
    })();
    return sse(readable);
  },
};
