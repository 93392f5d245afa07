import { call, type TestUser } from './api';

/** A definition around `graph`, with an open input schema unless one is given. */
export const definition = (id: string, graph: unknown[], extra: Record<string, unknown> = {}) => ({
  id,
  inputSchema: { type: 'object' },
  outputSchema: { type: 'object' },
  graph,
  ...extra,
});

export const mapping = (id: string, config: Record<string, unknown>) => ({ type: 'mapping', id, mapConfig: JSON.stringify(config) });

export async function install(user: TestUser, slug: string, def: unknown) {
  const res = await call(`/api/v1/workflows/${slug}/install`, { token: user.token, body: def });
  if (res.status !== 201) throw new Error(`install failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export async function launch(user: TestUser, id: string, inputs?: Record<string, unknown>) {
  const res = await call(`/api/v1/workflows/${id}/launch`, { token: user.token, body: inputs === undefined ? {} : { inputs } });
  if (res.status !== 201) throw new Error(`launch failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.runId as string;
}

/** Polls the run until its status is one of `wanted`; answers `{run, steps}`. */
export async function waitForRun(user: TestUser, runId: string, wanted: string[] = ['success', 'failed', 'canceled', 'suspended'], timeoutMs = 20_000) {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < until) {
    const res = await call(`/api/v1/workflows/runs/${runId}`, { token: user.token });
    last = res.body;
    if (res.status === 200 && wanted.includes(res.body.run.status)) return res.body;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`run ${runId} never reached ${wanted.join('|')}: ${JSON.stringify(last)}`);
}

/** The runs of workflow `workflowId` in the user's workspace, newest first. */
export async function runsOf(user: TestUser, workflowId: string) {
  const res = await call('/api/v1/workflows/runs?limit=200', { token: user.token });
  return (res.body.runs as { runId: string; workflowId: string }[]).filter((r) => r.workflowId === workflowId);
}

/** The input a run was launched with. */
export const inputOf = async (user: TestUser, runId: string) =>
  (await call(`/api/v1/workflows/runs/${runId}`, { token: user.token })).body.run.snapshot.context.input as unknown;
