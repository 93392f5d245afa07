/**
 * npm run bench:workflows: per-step overhead of the service's workflow engine (one WorkflowRun
 * object; steps that only compute run in it, the others go by queue message) against Cloudflare
 * Workflows (`step.do`), both in the same `wrangler dev`, printed as a ratio. Each engine runs
 * the same mapping step 1 and 50 times; per-step overhead = (time for 50 − time for 1) / 49,
 * median of ROUNDS rounds. Then a workflow of SKILL_STEPS skill runs: its overhead per step is
 * (the run's time − the sum of its executions' own times) / SKILL_STEPS, printed against the
 * same `step.do` overhead.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { measured, median, startService, TARGETS, writeBenchConfig } from './lib';

const ROUNDS = 3;
const STEPS = 50;
const SKILL_STEPS = 10;
const SKILL = 'meeting-notes-summarizer';
const CONFIG = 'bench/.workflows.wrangler.toml';

/** wrangler.toml with the bench Worker as main and the Cloudflare Workflow bound, written beside it. */
const writeConfig = () =>
  writeBenchConfig(CONFIG, 'workflows-worker.ts', '\n[[workflows]]\nname = "bench-mapping-steps"\nbinding = "BENCH_WORKFLOW"\nclass_name = "MappingSteps"\n');

async function startWorkflowService() {
  const stateDir = mkdtempSync(join(tmpdir(), 'wss-bench-'));
  const service = await startService(CONFIG, stateDir);
  const stop = async () => {
    await service.stop();
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(CONFIG, { force: true });
  };
  return { ...service, stop };
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  writeConfig();
  const service = await startWorkflowService();
  try {
    const headers = { 'x-api-key': service.apiKey, 'content-type': 'application/json' };
    const api = async (path: string, body?: unknown) => {
      const res = await fetch(`${service.base}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as any;
    };
    const mapping = (i: number) => ({
      type: 'mapping',
      id: `map-${i}`,
      mapConfig: JSON.stringify({ greeting: { template: 'Hello ${initData.name}' }, name: { initData: true, path: 'name' }, i: { value: i } }),
    });
    for (const n of [1, STEPS]) {
      const graph = Array.from({ length: n }, (_, i) => mapping(i));
      await api(`/api/v1/workflows/bench-${n}/install`, { id: `bench-${n}`, inputSchema: { type: 'object' }, outputSchema: { type: 'object' }, graph });
    }

    // Each skill step gets {slug, input} from the mapping before it.
    await api(`/api/v1/skills/${SKILL}/install`, {});
    const skillGraph = Array.from({ length: SKILL_STEPS }, (_, i) => [
      {
        type: 'mapping',
        id: `ask-${i}`,
        mapConfig: JSON.stringify({ slug: { value: SKILL }, input: { template: `Meeting ${i}: \${initData.name} ships on Friday.` } }),
      },
      { type: 'tool', id: `skill-${i}`, toolId: 'execute-skill' },
    ]).flat();
    await api('/api/v1/workflows/bench-skills/install', {
      id: 'bench-skills',
      inputSchema: { type: 'object' },
      outputSchema: { type: 'object' },
      graph: skillGraph,
    });

    async function serviceRun(n: number | 'skills') {
      const started = performance.now();
      const { runId } = await api(`/api/v1/workflows/bench-${n}/launch`, { inputs: { name: 'Ada' } });
      for (;;) {
        const { run } = await api(`/api/v1/workflows/runs/${runId}`);
        if (run?.status === 'success') return performance.now() - started;
        if (run && run.status !== 'running') throw new Error(`run ${runId} ended ${run.status}`);
        await pause(5);
      }
    }

    /** A skill workflow's time beyond its executions' own (each from its start to its completion). */
    async function skillOverhead() {
      const total = await serviceRun('skills');
      const { items } = await api(`/api/v1/executions?channels=workflow&limit=${SKILL_STEPS}`);
      const own = (items as { startedAt: string; completedAt: string }[]).reduce((sum, e) => sum + Date.parse(e.completedAt) - Date.parse(e.startedAt), 0);
      return (total - own) / SKILL_STEPS;
    }

    async function cloudflareRun(n: number) {
      const started = performance.now();
      const { id } = (await (await fetch(`${service.base}/bench/cf-workflow`, { method: 'POST', body: JSON.stringify({ steps: n, name: 'Ada' }) })).json()) as {
        id: string;
      };
      for (;;) {
        const status = (await (await fetch(`${service.base}/bench/cf-workflow/${id}`)).json()) as { status: string };
        if (status.status === 'complete') return performance.now() - started;
        if (status.status === 'errored' || status.status === 'terminated') throw new Error(`workflow ${id} ${status.status}`);
        await pause(5);
      }
    }

    await serviceRun(1); // warm up both
    await cloudflareRun(1);
    const perStep = { service: [] as number[], cloudflare: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      perStep.service.push(((await serviceRun(STEPS)) - (await serviceRun(1))) / (STEPS - 1));
      perStep.cloudflare.push(((await cloudflareRun(STEPS)) - (await cloudflareRun(1))) / (STEPS - 1));
    }
    const skillSteps: number[] = [];
    for (let round = 0; round < ROUNDS; round++) skillSteps.push(await skillOverhead());
    const s = median(perStep.service);
    const c = median(perStep.cloudflare);
    const k = median(skillSteps);
    console.log(`workflow engine vs Cloudflare Workflows, ${STEPS}-step mapping workflow (median of ${ROUNDS} rounds)`);
    console.log(`  per-step overhead   ${measured(s, c, TARGETS.workflowStep, `service ${s.toFixed(1)} ms, step.do ${c.toFixed(1)} ms`)}`);
    console.log(`${SKILL_STEPS} skill steps (each after a mapping), overhead per step beyond the skill run itself (median of ${ROUNDS} rounds)`);
    console.log(`  per-step overhead   ${measured(k, c, 'lower', `service ${k.toFixed(1)} ms, step.do ${c.toFixed(1)} ms`)}`);
  } finally {
    await service.stop();
  }
}

await main();
