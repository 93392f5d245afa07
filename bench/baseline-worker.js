// The baseline: a bare Worker that streams N Server-Sent Events as fast as workerd allows,
// with the same frame shape as an execution stream. What the service adds is measured against it.
export default {
  async fetch(request) {
    const n = Number(new URL(request.url).searchParams.get('n') ?? 100);
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
