// The baseline: a bare Worker that streams N Server-Sent Events as fast as workerd allows,
// with the same frame shape as an execution stream; and at /json, a JSON document shaped like the
// memory document (`content` of `?chars=` characters). What the service adds is measured against it.
export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === '/json') {
      const chars = Number(url.searchParams.get('chars') ?? 0);
      return Response.json({ content: 'x'.repeat(chars), updatedAt: new Date().toISOString() });
    }
    const n = Number(url.searchParams.get('n') ?? 100);
    const encoder = new TextEncoder();
    const { readable, writable } = new TransformStream();
    const writer = writable.getWriter();
    (async () => {
      for (let seq = 1; seq <= n; seq++) {
        const type = seq === n ? 'session.status_idle' : 'agent.message';
        await writer.write(encoder.encode(`id: ${seq}\ndata: ${JSON.stringify({ type, payload: { content: [{ type: 'text', text: 'word ' }] } })}\n\n`));
      }
      await writer.close();
    })();
    return new Response(readable, { headers: { 'content-type': 'text/event-stream', 'content-encoding': 'identity' } });
  },
};
