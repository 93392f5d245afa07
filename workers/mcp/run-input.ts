import { inputRequired, inputResponse, isSpecType, type ElicitRequestFormParams, type InputRequest, type InputRequests } from '@modelcontextprotocol/server';
import { z } from 'zod';

/**
 * What a run's snapshot says of its suspended steps (durable-objects/WorkflowRun.ts): each one's
 * prompt and metadata (`resumeSchema` among them), and the resumes made so far.
 */
const Snapshot = z.object({
  suspended: z.record(z.string(), z.object({ prompt: z.string().nullish(), metadata: z.record(z.string(), z.unknown()).nullish() })).optional(),
  resumes: z.array(z.object({ stepId: z.string() })).optional(),
});

/** What of a property's JSON Schema a form elicitation may carry. */
const FORM_KEYWORDS = [
  'type',
  'title',
  'description',
  'default',
  'enum',
  'enumNames',
  'oneOf',
  'anyOf',
  'items',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'format',
];

type JsonSchema = { type?: unknown; properties?: Record<string, Record<string, unknown>>; required?: unknown };
type FormSchema = ElicitRequestFormParams['requestedSchema'];

/**
 * The resume schema as a form, when it is what a form elicitation can ask for (a flat object of
 * strings, numbers, booleans and choices, each checked against the SDK's own schema of those);
 * null otherwise.
 */
function formOf(schema: JsonSchema): FormSchema | null {
  if (schema.type !== 'object' || !schema.properties) return null;
  const properties: FormSchema['properties'] = {};
  for (const [name, property] of Object.entries(schema.properties)) {
    const kept = Object.fromEntries(FORM_KEYWORDS.filter((k) => property[k] !== undefined).map((k) => [k, property[k]]));
    if (!isSpecType.PrimitiveSchemaDefinition(kept)) return null;
    properties[name] = kept;
  }
  const required = Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string' && r in properties) : [];
  return { type: 'object', properties, ...(required.length ? { required } : {}) };
}

/** One suspended step's question: its input request key, the elicitation, and how an accepted answer becomes resume data. */
export interface StepQuestion {
  key: string;
  stepId: string;
  request: InputRequest;
  resumeDataOf: (content: Record<string, unknown>) => unknown;
}

/**
 * The resume data of the one-field form asked for when the step's resume schema is not a flat
 * object of primitives (or there is none): the answer as JSON, or as text when it is not JSON.
 */
function parsedAnswer(content: Record<string, unknown>): unknown {
  const answer = typeof content.answer === 'string' ? content.answer : '';
  try {
    return JSON.parse(answer) as unknown;
  } catch {
    return answer;
  }
}

/**
 * The questions a run asks while suspended: one form elicitation per suspended step, built from
 * its `resumeSchema` as the console's resume form is. A key names the step and how many times it
 * was resumed before, so a step that suspends again (in a loop) asks under a new key.
 */
export function runQuestions(run: { runId: string; status: string; snapshot: Record<string, unknown> }): StepQuestion[] {
  if (run.status !== 'suspended') return [];
  const parsed = Snapshot.safeParse(run.snapshot);
  if (!parsed.success) return [];
  const { suspended = {}, resumes = [] } = parsed.data;
  return Object.entries(suspended).map(([stepId, step]) => {
    const key = `${stepId}#${resumes.filter((r) => r.stepId === stepId).length + 1}`;
    const message = step.prompt ?? `Workflow run ${run.runId} is waiting for input at step ${stepId}.`;
    const schema = (step.metadata?.resumeSchema ?? undefined) as JsonSchema | undefined;
    const form = schema && formOf(schema);
    if (form) return { key, stepId, request: inputRequired.elicit({ mode: 'form', message, requestedSchema: form }), resumeDataOf: (content) => content };
    const described = schema ? `The answer as JSON, matching this JSON Schema: ${JSON.stringify(schema)}` : 'The answer (JSON, or text)';
    const requestedSchema: FormSchema = {
      type: 'object',
      properties: { answer: { type: 'string', title: 'Answer', description: described } },
      required: ['answer'],
    };
    return { key, stepId, request: inputRequired.elicit({ mode: 'form', message, requestedSchema }), resumeDataOf: parsedAnswer };
  });
}

export const inputRequestsOf = (questions: StepQuestion[]): InputRequests => Object.fromEntries(questions.map((q) => [q.key, q.request]));

/**
 * What the client answered: the first accepted answer as resume data (a run takes one resume at
 * a time; a step still suspended after it is asked again), and whether an answer was declined or
 * cancelled.
 */
export function answerTo(questions: StepQuestion[], responses: Record<string, unknown> | undefined) {
  let refused = false;
  for (const question of questions) {
    const view = inputResponse(responses, question.key);
    if (view.kind !== 'elicit') continue;
    if (view.action === 'accept') return { accepted: { stepId: question.stepId, resumeData: question.resumeDataOf(view.content ?? {}) }, refused };
    refused = true;
  }
  return { accepted: null, refused };
}
