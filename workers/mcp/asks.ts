import { inputRequired, type CallToolResult, type InputRequiredResult, type ServerContext } from '@modelcontextprotocol/server';
import type { CapabilityContext } from '../capabilities/capability';
import { findRun, presentRun } from '../services/workflow-runs';
import { elicitsForms } from './client-capabilities';
import { answerTo, inputRequestsOf, runQuestions } from './run-input';

/** A tool's arguments as the SDK parsed them against its input schema. */
type Args = Record<string, unknown>;

/**
 * Before a tool runs: the arguments it runs with (completed from the person's answers), or an
 * answer without running it (`input_required`: the multi-round-trip pattern of 2026-07-28, which
 * the client answers by retrying the call with `inputResponses`).
 */
export type Ask = (ctx: CapabilityContext, args: Args, call: ServerContext) => Promise<{ args: Args } | { answer: CallToolResult | InputRequiredResult }>;

const declined: CallToolResult = {
  isError: true,
  content: [
    { type: 'text', text: JSON.stringify({ error: { code: 'INPUT_DECLINED', message: 'The person declined to answer; the run is still suspended' } }) },
  ],
};

/**
 * `resume-workflow-run` without `resumeData`, from a client that answers form elicitations: the
 * suspended step's question (a form built from its resume schema) is asked of the person, and
 * the retry carrying the answer resumes the run with it. With `resumeData`, or from a client
 * that cannot ask (2025 clients among them), the call resumes as it always did.
 */
const askResumeData: Ask = async (ctx, args, call) => {
  if (args.resumeData !== undefined || !elicitsForms(call)) return { args };
  const row = await findRun(ctx.db, ctx.actor, String(args.runId));
  const questions = row ? runQuestions(presentRun(row)).filter((q) => args.stepId === undefined || q.stepId === args.stepId) : [];
  // Nothing to ask (no such run, not suspended, another step): the service answers why.
  if (questions.length === 0) return { args };
  const { accepted, refused } = answerTo(questions, call.mcpReq.inputResponses);
  if (accepted) return { args: { ...args, ...accepted } };
  if (refused) return { answer: declined };
  return { answer: inputRequired({ inputRequests: inputRequestsOf(questions) }) };
};

/** The tools that may ask a person before they run, by name. */
export const ASKS: Record<string, Ask> = { 'resume-workflow-run': askResumeData };
