/**
 * npm run bench:streams: execution streams against a bare workerd SSE endpoint, measured in one
 * run and printed as ratios (service / baseline; lower is better). Both run under `wrangler dev` on
 * this machine, so absolute times mean little and ratios are what to compare across changes.
 * One run and its stream are measured twice: on a hosted model's API (bench/model-server.ts),
 * whose events reach the service over a socket as a real provider's do, and on the built-in
 * local model, which answers inside the service's own process.
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { startService } from '../test/e2e/helpers';
import { measured, median, ratio, startBaseline, TARGETS, type Target } from './lib';
import { startModelServer } from './model-server';

const SUBSCRIBERS = 100;
/** The large fan-out, in fewer rounds: each opens this many streams on each side. */
const MANY_SUBSCRIBERS = 1_000;
const MANY_ROUNDS = 3;
const ROUNDS = 5;
/** One stream's measures move more between rounds: more rounds of them (every run of the local service stays within its user's 20 run starts a minute). */
const STREAM_ROUNDS = 9;
/** The hosted model's answer, in text deltas: about as many events a run as the local model's. */
const MODEL_WORDS = 95;

/** Reads an SSE response to its end; returns the frame count and ms to its first frame, its first and last frames with `words` (an `agent.message`) and how many, its last frame and its end. */
async function consume(res: Response, started: number, words = '"agent.message"') {
  const decoder = new TextDecoder();
  let buffer = '';
  let frames = 0;
  let firstMessageMs = Number.NaN;
  let lastMessageMs = Number.NaN;
  let messages = 0;
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
      if (!part.includes(words)) continue;
      messages += 1;
      lastMessageMs = lastFrameMs;
      if (Number.isNaN(firstMessageMs)) firstMessageMs = lastFrameMs;
    }
  }
  return { frames, firstMessageMs, lastMessageMs, messages, firstFrameMs, lastFrameMs, totalMs: performance.now() - started };
}

type Stream = Awaited<ReturnType<typeof consume>>;

/** A stream's own rate: the frames after its first over the time from its first frame to its last. */
const streamRate = (r: Stream) => (r.frames - 1) / ((r.lastFrameMs - r.firstFrameMs) / 1000);
const wholeRate = (r: Stream) => r.frames / (r.totalMs / 1000);
/** The rate of the model's words alone: the `agent.message` frames after the first over the time from the first to the last. */
const wordsRate = (r: Stream) => (r.messages - 1) / ((r.lastMessageMs - r.firstMessageMs) / 1000);

/** The bench's skill on `service`, and one run of it: open `subscribers` streams, post the message, read them all to the end. */
async function runner(service: { base: string; apiKey: string }) {
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
  return async (subscribers: number) => {
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
  };
}

async function main() {
  const model = await startModelServer(MODEL_WORDS);
  // One signed URL opens every subscriber here, all counted toward one key's open streams: the
  // cap is raised far above them (a round's slots are given back just after its streams end).
  const streamCap = ['--var', 'MAX_OPEN_STREAMS:1000000'];
  const service = await startService(90_000, { args: streamCap });
  const hostedService = await startService(150_000, { args: [...model.vars, ...streamCap] });
  const baseline = await startBaseline();
  try {
    const serviceRun = await runner(service);
    const hostedRun = await runner(hostedService);

    async function baselineRun(subscribers: number, n: number, byteStream = false) {
      const started = performance.now();
      const streams = await Promise.all(Array.from({ length: subscribers }, () => fetch(`${baseline.base}/?n=${n}${byteStream ? '&byte=1' : ''}`)));
      return Promise.all(streams.map((s) => consume(s, started)));
    }

    /**
     * The bare Worker relaying the model's answer: as it comes (time to its first text delta), or
     * in an object that writes a frame of each event (`frames`), storing each first (`stored`).
     */
    async function relayRun(how: 'as-is' | 'frames' | 'stored' = 'as-is') {
      const started = performance.now();
      const query = how === 'as-is' ? '' : how === 'frames' ? '&frames=1' : '&frames=1&store=1';
      return consume(
        await fetch(`${baseline.base}/relay?to=${encodeURIComponent(model.url)}${query}`),
        started,
        how === 'as-is' ? '"text_delta"' : '"agent.message"',
      );
    }

    const startLoad = loadavg()[0]!.toFixed(2);
    await serviceRun(1); // warm up all three
    await hostedRun(1);
    const frames = (await serviceRun(1))[0]!.frames;
    const hostedFrames = (await hostedRun(1))[0]!.frames;
    await baselineRun(1, frames);
    await relayRun();
    await relayRun('frames');
    await relayRun('stored');

    /** One stream of each run against the bare route's stream of as many frames, per round. */
    const sample = () => ({ service: [] as Stream[], baseline: [] as Stream[] });
    const local = sample();
    const hosted = sample();
    const fan = { service: [] as number[], baseline: [] as number[] };
    const relayed: Stream[] = [];
    const relayedFrames: Stream[] = [];
    const relayedStored: Stream[] = [];
    for (let round = 0; round < STREAM_ROUNDS; round++) {
      hosted.service.push((await hostedRun(1))[0]!);
      hosted.baseline.push((await baselineRun(1, hostedFrames))[0]!);
      relayed.push(await relayRun());
      relayedFrames.push(await relayRun('frames'));
      relayedStored.push(await relayRun('stored'));
      local.service.push((await serviceRun(1))[0]!);
      local.baseline.push((await baselineRun(1, frames))[0]!);
    }
    for (let round = 0; round < ROUNDS; round++) {
      const sf = await serviceRun(SUBSCRIBERS);
      const bf = await baselineRun(SUBSCRIBERS, frames);
      fan.service.push(Math.max(...sf.map((r) => r.totalMs)));
      fan.baseline.push(Math.max(...bf.map((r) => r.totalMs)));
    }
    const of = (streams: Stream[], measure: (s: Stream) => number) => median(streams.map(measure));
    const firstMessage = (s: Stream) => s.firstMessageMs;
    const report = (
      title: string,
      one: ReturnType<typeof sample>,
      rate: { label: string; measure: (s: Stream) => number },
      others: (typeof rate)[],
      floor?: { first: string; rate: string[] },
      targets?: { first: Target; rate: Target },
    ) => {
      console.log(`  ${title}`);
      console.log(
        `    time to first agent.message   ${measured(of(one.service, firstMessage), of(one.baseline, firstMessage), targets?.first ?? 'lower', `service ${of(one.service, firstMessage).toFixed(1)} ms, baseline ${of(one.baseline, firstMessage).toFixed(1)} ms`)}`,
      );
      if (floor) console.log(`      ${floor.first}`);
      console.log(
        `    events per second, 1 stream   ${measured(of(one.service, rate.measure), of(one.baseline, rate.measure), targets?.rate ?? 'higher', `${rate.label}: service ${of(one.service, rate.measure).toFixed(0)}/s, baseline ${of(one.baseline, rate.measure).toFixed(0)}/s`)}`,
      );
      for (const line of floor?.rate ?? []) console.log(`      ${line}`);
      for (const other of others) {
        console.log(`      for comparison, ${other.label}: ratio ${ratio(of(one.service, other.measure), of(one.baseline, other.measure))}`);
      }
    };
    const firstToLast = { label: 'from the first frame to the last', measure: streamRate };
    const whole = { label: "over the whole run (from posting user.message, or the request, to the stream's end)", measure: wholeRate };
    const words = { label: "the model's words alone (from the first agent.message frame to the last)", measure: wordsRate };
    console.log(
      `execution streams vs bare workerd SSE (one stream: median of ${STREAM_ROUNDS} rounds, subscribers: of ${ROUNDS}; load average (1 min) at the start ${startLoad})`,
    );
    report(
      `a hosted model (Anthropic's API, served on loopback, answering at once, an event a write; ${hostedFrames} events a run):`,
      hosted,
      firstToLast,
      [whole, words],
      {
        first: `the floor here: the bare Worker relaying the model's answer (one fetch to it, nothing else): first words in ${of(relayed, firstMessage).toFixed(1)} ms, ratio ${ratio(of(relayed, firstMessage), of(hosted.baseline, firstMessage))}; the service to this floor: ratio ${ratio(of(hosted.service, firstMessage), of(relayed, firstMessage))}`,
        rate: [
          "the floors here, the bare Worker relaying the model's answer:",
          ...(
            [
              ['as it comes', relayed],
              ['in an object, a frame written for each event', relayedFrames],
              ['in an object, each event stored as a row before its frame', relayedStored],
            ] as const
          ).map(
            ([how, streams]) =>
              `  ${how}: ${of(streams, streamRate).toFixed(0)}/s, ratio ${ratio(of(streams, streamRate), of(hosted.baseline, streamRate))}; the service to this floor: ratio ${ratio(of(hosted.service, streamRate), of(streams, streamRate))}`,
          ),
        ],
      },
      { first: TARGETS.firstMessage, rate: TARGETS.streamRate },
    );
    report(`the built-in local model (it saves an artifact before its first words; ${frames} events a run):`, local, firstToLast, [whole, words]);
    console.log(
      `  ${SUBSCRIBERS} subscribers, time to last idle   ${measured(median(fan.service), median(fan.baseline), TARGETS.subscribers100, 'the local model')}`,
    );
    // Printed apart, after the lines above: the largest run is the likeliest to fail on a loaded machine.
    const many = { service: [] as number[], baseline: [] as number[], byteBaseline: [] as number[] };
    for (let round = 0; round < MANY_ROUNDS; round++) {
      many.service.push(Math.max(...(await serviceRun(MANY_SUBSCRIBERS)).map((r) => r.totalMs)));
      many.baseline.push(Math.max(...(await baselineRun(MANY_SUBSCRIBERS, frames)).map((r) => r.totalMs)));
      many.byteBaseline.push(Math.max(...(await baselineRun(MANY_SUBSCRIBERS, frames, true)).map((r) => r.totalMs)));
    }
    console.log(
      `  ${MANY_SUBSCRIBERS} subscribers, time to last idle   ${measured(median(many.service), median(many.baseline), TARGETS.subscribers1000, `median of ${MANY_ROUNDS} rounds`)}`,
    );
    // The service's streams are workerd's byte stream (workers/lib/sse.ts); the bare route on the same stream shows how much of the ratio that is.
    console.log(
      `    for comparison, against the bare route on workerd's byte stream (IdentityTransformStream): ratio ${ratio(median(many.service), median(many.byteBaseline))}`,
    );
    console.log(`load average (1 min) at the end: ${loadavg()[0]!.toFixed(2)}`);
  } finally {
    baseline.stop();
    await Promise.all([service.stop(), hostedService.stop(), model.stop()]);
  }
}

await main();
