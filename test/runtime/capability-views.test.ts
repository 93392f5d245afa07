import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { authorize } from '../../workers/auth/actor';
import { CAPABILITIES } from '../../workers/capabilities';
import type { Capability } from '../../workers/capabilities/capability';
import { connectorRunTools } from '../../workers/runtime/connector-tools';
import { runTools } from '../../workers/runtime/tools';
import { threadRunTools } from '../../workers/runtime/workflow-tools';
import type { TurnInput } from '../../workers/services/execution-events';
import { signUp } from '../helpers/api';
import { shardDbFor } from '../helpers/shards';
import { keyTurn, turnOf } from '../helpers/turns';

/** A turn offered every run tool: it answers a thread and was started with a repository. */
const everyKind = (turn: TurnInput): TurnInput => ({ ...turn, threadId: 'thr_views', connector: { type: 'github', repo: 'octo-org/widgets' } });
const toolsOf = async (turn: TurnInput) => {
  const db = await shardDbFor(turn.actor.workspaceId);
  return [...runTools(db, env, turn), ...threadRunTools(db, env, turn), ...connectorRunTools(db, env, turn)];
};
const views = CAPABILITIES.filter((capability) => capability.agentTool);

/** Arguments each view accepts, so the call reaches the access check. */
const VALID_ARGS: Record<string, Record<string, unknown>> = {
  append_memory: { content: 'noted' },
  start_workflow: { workflowId: 'digest' },
  read_repository_file: { path: 'README.md' },
};

/** The refusal the capability's own check gives this actor: what its REST route and MCP tool answer. */
function refusalOf(capability: Capability, turn: TurnInput): string {
  try {
    authorize(capability.access, turn.actor);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`${capability.name} lets the actor through`);
}

describe('the run tools are views of the capabilities', () => {
  it('every tool a run offers is a capability’s agent-run view, but write_artifact and http_request, the run’s own work', async () => {
    const user = await signUp();
    const names = (await toolsOf(everyKind(turnOf(user)))).map((tool) => tool.spec.name);
    expect(names.sort()).toEqual([...views.map((capability) => capability.agentTool!.name), 'http_request', 'write_artifact'].sort());
  });

  it('each refuses a launcher without its capability’s scope with that capability’s refusal, before it acts', async () => {
    const user = await signUp();
    const turn = everyKind(await keyTurn(user, ['tool:execute']));
    const tools = await toolsOf(turn);
    for (const capability of views) {
      const tool = tools.find((t) => t.spec.name === capability.agentTool!.name)!;
      const expected = { content: refusalOf(capability, turn), isError: true };
      expect(await tool.run(VALID_ARGS[tool.spec.name] ?? {}, { id: `toolu_${tool.spec.name}` }), tool.spec.name).toEqual(expected);
    }
  });

  it('hand the model JSON Schema made from zod, the run’s own tools too', async () => {
    const user = await signUp();
    for (const tool of await toolsOf(everyKind(turnOf(user)))) {
      expect(tool.spec.inputSchema, tool.spec.name).toMatchObject({ type: 'object', properties: expect.any(Object) });
      expect(tool.spec.inputSchema, tool.spec.name).not.toHaveProperty('$schema');
    }
    const http = (await toolsOf(turnOf(user))).find((tool) => tool.spec.name === 'http_request')!;
    expect(http.spec.inputSchema).toMatchObject({ required: ['url'], properties: { method: { enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] } } });
  });
});
