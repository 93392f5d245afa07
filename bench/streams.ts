/**
 * npm run bench:streams: execution streams against a bare workerd SSE endpoint, measured in one
 * run and printed as ratios (service / baseline; lower is better). Both run under `wrangler dev` on
 * this machine, so absolute times mean little and ratios are what to compare across changes.
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { startService } from '../test/e2e/helpers';
import { median, startBaseline } from './lib';

const SUBSCRIBERS = 100;
/** The large fan-out, in fewer rounds: each opens this many streams on each side. */
const MANY_SUBSCRIBERS = 1_000;
const MANY_ROUNDS = 3;
const ROUNDS = 5;

/** Reads an SSE response to its end; returns the frame count and ms to its first frame, its first `agent.message`, its last frame and its end. */
async function consume(res: Response, started: number) {
  const decoder = new TextDecoder();
  let buffer = '';
  let frames = 0;
  let firstMessageMs = Number.NaN;
  let firstFrameMs = Number.NaN;
  let lastFrameMs = Number.NaN;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    const parts = buffer.split('\n\n');
    buffer = parts.pop()!;
    for (const part of parts) {
      if (!part.includes('data:')) continue;
      frames += 1;
      lastFrameMs = performance.now() - started;
      if (Number.isNaN(firstFrameMs)) firstFrameMs = lastFrameMs;
      if (Number.isNaN(firstMessageMs) && part.includes('"agent.message"')) firstMessageMs = performance.now() - started;
    }
  }
  return { frames, firstMessageMs, firstFrameMs, lastFrameMs, totalMs: performance.now() - started };
}

async function main() {
  const service = await startService();
  const baseline = await startBaseline();
  try {
    const headers = { 'x-api-key': service.apiKey, 'content-type': 'application/json' };
    const api = async (path: string, init: RequestInit = {}) => {
      const res = await fetch(`${service.base}${path}`, { ...init, headers });
      if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      return res;
    };
    await api('/api/v1/skills/bench-skill', {
      method: 'PUT',
      body: JSON.stringify({ name: 'Bench', description: 'Bench.', category: 'General', prompt: '# Bench\nSummarise.' }),
    });
    const input = 'Plan the launch. Write the notes. Tell the team. Book the room. Order the food. Send the invites.';

    /** One run: open `subscribers` streams, post the message, read them all to the end. */
    async function serviceRun(subscribers: number) {
      const created = (await (await api('/api/v1/executions', { method: 'POST', body: JSON.stringify({ skill_slug: 'bench-skill', input }) })).json()) as {
        id: string;
      };
      const { sseUrl } = (await (await api(`/api/v1/executions/${created.id}/stream-token`)).json()) as { sseUrl: string };
      const url = sseUrl.replace(new URL(sseUrl).origin, service.base);
      const streams = await Promise.all(Array.from({ length: subscribers }, () => fetch(url)));
      const started = performance.now();
      await api(`/api/v1/executions/${created.id}/events`, {
        method: 'POST',
        body: JSON.stringify({ events: [{ type: 'user.message', content: [{ type: 'text', text: input }] }] }),
      });
      return Promise.all(streams.map((s) => consume(s, started)));
    }

    async function baselineRun(subscribers: number, n: number, byteStream = false) {
      const started = performance.now();
      const streams = await Promise.all(Array.from({ length: subscribers }, () => fetch(`${baseline.base}/?n=${n}${byteStream ? '&byte=1' : ''}`)));
      return Promise.all(streams.map((s) => consume(s, started)));
    }

    const startLoad = loadavg()[0]!.toFixed(2);
    await serviceRun(1); // warm up both
    const frames = (await serviceRun(1))[0]!.frames;
    await baselineRun(1, frames);

    const one = {
      service: [] as number[],
      baseline: [] as number[],
      wholeService: [] as number[],
      wholeBaseline: [] as number[],
      firstService: [] as number[],
      firstBaseline: [] as number[],
    };
    /** A stream's own rate: the frames after its first over the time from its first frame to its last. */
    const streamRate = (r: Awaited<ReturnType<typeof consume>>) => (r.frames - 1) / ((r.lastFrameMs - r.firstFrameMs) / 1000);
    const fan = { service: [] as number[], baseline: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      const [s] = await serviceRun(1);
      const [b] = await baselineRun(1, frames);
      one.service.push(streamRate(s!));
      one.baseline.push(streamRate(b!));
      one.wholeService.push(s!.frames / (s!.totalMs / 1000));
      one.wholeBaseline.push(b!.frames / (b!.totalMs / 1000));
      one.firstService.push(s!.firstMessageMs);
      one.firstBaseline.push(b!.firstMessageMs);
      const sf = await serviceRun(SUBSCRIBERS);
      const bf = await baselineRun(SUBSCRIBERS, frames);
      fan.service.push(Math.max(...sf.map((r) => r.totalMs)));
      fan.baseline.push(Math.max(...bf.map((r) => r.totalMs)));
    }
    const ratio = (a: number, b: number) => (a / b).toFixed(2);
    console.log(`execution streams vs bare workerd SSE (${frames} events per run, median of ${ROUNDS} rounds; load average (1 min) at the start ${startLoad})`);
    console.log(
      `  time to first agent.message   ratio ${ratio(median(one.firstService), median(one.firstBaseline))}   (lower is better; service ${median(one.firstService).toFixed(1)} ms, baseline ${median(one.firstBaseline).toFixed(1)} ms)`,
    );
    console.log(
      `  events per second, 1 stream   ratio ${ratio(median(one.service), median(one.baseline))}   (higher is better; first frame to last: service ${median(one.service).toFixed(0)}/s, baseline ${median(one.baseline).toFixed(0)}/s)`,
    );
    console.log(
      `    for comparison, over the whole run: ratio ${ratio(median(one.wholeService), median(one.wholeBaseline))}   (from posting user.message, or the request, to the stream's end)`,
    );
    console.log(`  ${SUBSCRIBERS} subscribers, time to last idle   ratio ${ratio(median(fan.service), median(fan.baseline))}   (lower is better)`);
    // Printed apart, after the lines above: the largest run is the likeliest to fail on a loaded machine.
    const many = { service: [] as number[], baseline: [] as number[], byteBaseline: [] as number[] };
    for (let round = 0; round < MANY_ROUNDS; round++) {
      many.service.push(Math.max(...(await serviceRun(MANY_SUBSCRIBERS)).map((r) => r.totalMs)));
      many.baseline.push(Math.max(...(await baselineRun(MANY_SUBSCRIBERS, frames)).map((r) => r.totalMs)));
      many.byteBaseline.push(Math.max(...(await baselineRun(MANY_SUBSCRIBERS, frames, true)).map((r) => r.totalMs)));
    }
    console.log(
      `  ${MANY_SUBSCRIBERS} subscribers, time to last idle   ratio ${ratio(median(many.service), median(many.baseline))}   (lower is better; median of ${MANY_ROUNDS} rounds)`,
    );
    // The service's streams are workerd's byte stream (workers/lib/sse.ts); the bare route on the same stream shows how much of the ratio that is.
    console.log(
      `    for comparison, against the bare route on workerd's byte stream (IdentityTransformStream): ratio ${ratio(median(many.service), median(many.byteBaseline))}`,
    );
    console.log(`load average (1 min) at the end: ${loadavg()[0]!.toFixed(2)}`);
  } finally {
    baseline.stop();
    await service.stop();
  }
}

await main();
