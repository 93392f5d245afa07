import { and, eq } from 'drizzle-orm';
import { lastTurnText } from '../services/execution-events';
import { executions } from '../../schema';
import { authorizeWithGrants, type Actor } from '../auth/actor';
import { CAPABILITIES } from '../capabilities';
import { createExecutionCapability } from '../capabilities/executions';
import { stepToolIdOf, type Capability } from '../capabilities/capability';
import { runContext } from './capability-tools';
import { globalDbOf } from '../lib/db';
import type { ShardDb, Env } from '../env';
import { AppError } from '../errors';
import { parseId } from '../lib/ids';
import { findAgent } from '../services/agents';
import { interruptTurn } from '../services/execution-lifecycle';
import { runAgent } from '../services/executions';
import type { Json, LeafStep, MappingStep } from '../workflows/compiler';
import type { StepKind } from '../workflows/interpreter';
import { StepError, type ExecutionCheck } from '../workflows/steps';

/** What starting a step that runs an execution answers. */
export type Started = { executionId: string };

/** Capacity refusals (another execution working, the per-user start rate) wait; anything else fails the step. */
function startFailure(error: unknown): never {
  if (error instanceof AppError) {
    const retryable = error.code === 'EXECUTION_RUNNING' || error.code === 'RATE_LIMITED';
    throw new StepError(`${error.code}: ${error.message}`, retryable);
  }
  throw error;
}

/** The capability a workflow `tool` step of this id runs: the one whose workflow-step view names it. */
const stepCapability = (toolId: string) => CAPABILITIES.find((c) => c.workflowStep && stepToolIdOf(c) === toolId);

/** How a tool step of this id runs, as its capability declares; undefined for one this deployment does not offer. */
export const stepKind = (toolId: string): StepKind | undefined => stepCapability(toolId)?.workflowStep?.kind;

/**
 * The scope the check of a step needs (that of the capability it mirrors), or null for a step
 * that acts on nothing outside its run (a mapping, a sleep, a step waiting for input).
 */
export function stepScope(step: LeafStep | MappingStep): string | null {
  const capability = step.type === 'agent' ? createExecutionCapability : step.type === 'tool' ? stepCapability(step.toolId) : undefined;
  if (!capability || capability.workflowStep?.kind === 'input') return null;
  return 'scope' in capability.access ? capability.access.scope : null;
}

/**
 * A step passes the check of the capability it mirrors for the run's actor: a run does nothing
 * its launcher could not. A refusal fails the step, naming the scope.
 */
async function authorizeStep(env: Env, actor: Actor, step: string, capability: Capability) {
  try {
    await authorizeWithGrants(globalDbOf(env), capability.access, actor, undefined);
  } catch (error) {
    if (error instanceof AppError) throw new StepError(`${step}: ${error.message}`);
    throw error;
  }
}

const asText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

/** An agent step's prompt: its input as text, plus the output contract when it declares one. */
export async function startAgent(db: ShardDb, env: Env, actor: Actor, step: Extract<LeafStep, { type: 'agent' }>, input: unknown): Promise<Started> {
  await authorizeStep(env, actor, `agent step ${step.id}`, createExecutionCapability);
  const agent = await findAgent(db, actor.workspaceId, step.agentSlug);
  if (!agent) throw new StepError(`The agent ${step.agentSlug} no longer exists in this workspace`);
  const contract =
    step.outputSchema === undefined
      ? ''
      : `\n\nAnswer with only a JSON value (no prose, no code fence) that conforms to this JSON Schema:\n${JSON.stringify(step.outputSchema)}`;
  const text = (input === undefined || input === null || input === '' ? 'Begin.' : asText(input)) + contract;
  try {
    return { executionId: await runAgent(db, env, actor, agent, text, step.budget) };
  } catch (error) {
    return startFailure(error);
  }
}

/** Starts the execution of an agent step, or of a tool step whose capability declares the kind execution, for the run's actor. */
export async function startStep(db: ShardDb, env: Env, actor: Actor, step: LeafStep, input: unknown, runId: string): Promise<Started> {
  if (step.type === 'agent') return startAgent(db, env, actor, step, input);
  const capability = step.type === 'tool' ? stepCapability(step.toolId) : undefined;
  const view = capability?.workflowStep;
  if (!capability || view?.kind !== 'execution')
    throw new StepError(`Tool ${step.type === 'tool' ? step.toolId : step.id} is not available in this deployment`);
  await authorizeStep(env, actor, capability.name, capability);
  try {
    return await view.start(runContext(db, env, actor, runId, 'workflow'), input);
  } catch (error) {
    return startFailure(error);
  }
}

export async function checkExecution(db: ShardDb, env: Env, workspaceId: string, executionId: string): Promise<ExecutionCheck> {
  const id = parseId('exec', executionId);
  const [row] = await db
    .select({ status: executions.status })
    .from(executions)
    .where(and(eq(executions.workspaceId, workspaceId), eq(executions.id, id ?? -1)))
    .limit(1);
  if (!row) return { state: 'stopped', reason: `execution ${executionId} no longer exists` };
  if (row.status === 'working') return { state: 'working' };
  const events = await env.EXECUTION_SESSION.getByName(executionId).read(0);
  if (row.status === 'completed') {
    return { state: 'completed', text: lastTurnText(events), executionId };
  }
  const idle = events.filter((e) => e.type === 'session.status_idle').at(-1);
  const reason = (idle?.payload.stop_reason as { type?: string } | undefined)?.type ?? row.status;
  return { state: 'stopped', reason: `execution ${executionId} ended with ${reason}` };
}

/**
 * Tools that answer at once: the workflow-step view of the capability of that name, checked for
 * the run's actor (a refusal fails the step, naming the scope).
 */
export async function runInstantTool(db: ShardDb, env: Env, actor: Actor, toolId: string, runId: string): Promise<Json> {
  const capability = stepCapability(toolId);
  const view = capability?.workflowStep;
  if (!capability || view?.kind !== 'read') throw new StepError(`Tool ${toolId} is not available in this deployment`);
  await authorizeStep(env, actor, toolId, capability);
  const output = await capability.run(runContext(db, env, actor, runId, 'workflow'), {});
  return view.output(output) as Json;
}

/** Interrupts an execution a canceled run no longer needs; one that already ended is left alone. */
export async function stopExecution(env: Env, db: ShardDb, workspaceId: string, executionId: string) {
  const id = parseId('exec', executionId);
  const [row] = await db
    .select()
    .from(executions)
    .where(and(eq(executions.workspaceId, workspaceId), eq(executions.id, id ?? -1)))
    .limit(1);
  if (row?.status === 'working') await interruptTurn(db, env, null, row);
}
