import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import type { TurnInput } from '../../workers/services/execution-events';
import { threadRunTools } from '../../workers/runtime/workflow-tools';
import { call, signUp } from '../helpers/api';
import { shardD1, shardDbFor } from '../helpers/shards';
import { turnOf } from '../helpers/turns';
import { definition, install, mapping, waitForRun } from '../helpers/workflows';

async function chatTurn(threadId?: string) {
  const user = await signUp();
  await call('/api/v1/skills/notes', {
    method: 'PUT',
    token: user.token,
    body: { name: 'Notes', description: 'Takes notes.', category: 'productivity', prompt: '# Notes' },
  });
  const thread = (await call('/api/v1/threads', { token: user.token, body: { skill_slug: 'notes' } })).body;
  const turn = turnOf(user, { requestId: 'req-workflow-tools', skillName: 'Notes', skillSlug: 'notes', threadId: threadId ?? thread.id });
  return { user, thread, turn };
}

const startWorkflow = async (turn: TurnInput) =>
  threadRunTools(await shardDbFor(turn.actor.workspaceId), env, turn).find((t) => t.spec.name === 'start_workflow')!;

describe('start_workflow, the tool of a chat turn', () => {
  it('is offered only to a turn that answers a thread', async () => {
    const { user, turn } = await chatTurn();
    const db = await shardDbFor(user.workspaceId);
    expect(threadRunTools(db, env, turn).map((t) => t.spec.name)).toEqual(['start_workflow']);
    expect(threadRunTools(db, env, { ...turn, threadId: undefined })).toEqual([]);
  });

  it('launches the workflow with its inputs, tied to the thread', async () => {
    const { user, thread, turn } = await chatTurn();
    const schemaOf = { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] };
    await install(user, 'digest', definition('digest', [mapping('echo', { topic: { initData: true, path: 'topic' } })], { inputSchema: schemaOf }));
    const result = await (await startWorkflow(turn)).run({ workflowId: 'digest', inputs: { topic: 'q3' } });
    expect(result.isError).toBeUndefined();
    const runId = /as run ([\w-]+);/.exec(result.content)![1]!;
    const finished = await waitForRun(user, runId, ['success']);
    expect(finished.run.snapshot.result).toEqual({ topic: 'q3' });
    const row = await (await shardD1(user.workspaceId)).prepare('SELECT thread_id FROM workflow_runs WHERE run_id = ?').bind(runId).first();
    expect(row).toEqual({ thread_id: thread.id });
  });

  it('starts one run per tool call and records its launch once: made again by a cut-off turn, the call answers the same run', async () => {
    const { user, turn } = await chatTurn();
    await install(user, 'digest', definition('digest', [mapping('echo', { topic: { initData: true, path: 'topic' } })]));
    const tool = await startWorkflow({ ...turn, turnKey: `exec_1:${crypto.randomUUID()}` });
    const runIdIn = (result: { content: string }) => /as run ([\w-]+);/.exec(result.content)![1]!;
    const first = await tool.run({ workflowId: 'digest', inputs: { topic: 'q3' } }, { id: 'toolu_1' });
    expect(await tool.run({ workflowId: 'digest', inputs: { topic: 'q3' } }, { id: 'toolu_1' })).toEqual(first);
    const other = await tool.run({ workflowId: 'digest', inputs: { topic: 'q4' } }, { id: 'toolu_2' });
    expect(runIdIn(other)).not.toBe(runIdIn(first));
    await waitForRun(user, runIdIn(first), ['success']);
    await waitForRun(user, runIdIn(other), ['success']);
    const runs = (await call('/api/v1/workflows/runs', { token: user.token })).body.runs;
    expect(runs.map((r: { runId: string }) => r.runId).sort()).toEqual([runIdIn(first), runIdIn(other)].sort());
    const launches = (await call('/api/v1/audit-logs?action=workflow.launched', { token: user.token })).body.data;
    expect(launches.map((e: { resourceId: string }) => e.resourceId).sort()).toEqual([runIdIn(first), runIdIn(other)].sort());
  });

  it('hands the model the refusal: unknown workflow, inputs against the schema, inputs not an object', async () => {
    const { user, turn } = await chatTurn();
    await install(
      user,
      'digest',
      definition('digest', [mapping('echo', { topic: { initData: true, path: 'topic' } })], { inputSchema: { type: 'object', required: ['topic'] } }),
    );
    expect(await (await startWorkflow(turn)).run({ workflowId: 'missing' })).toEqual({ content: 'Workflow not found', isError: true });
    expect(await (await startWorkflow(turn)).run({ workflowId: 'digest', inputs: {} })).toMatchObject({
      isError: true,
      content: expect.stringContaining('topic'),
    });
    expect(await (await startWorkflow(turn)).run({ workflowId: 'digest', inputs: ['q3'] })).toEqual({ content: 'inputs must be an object', isError: true });
    expect((await call('/api/v1/workflows/runs', { token: user.token })).body.runs).toEqual([]);
  });
});
