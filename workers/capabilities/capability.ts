import type { Context, MiddlewareHandler } from 'hono';
import type { ToolAnnotations } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Actor } from '../auth/actor';
import type { RouteAccess } from '../auth/access';
import type { RequestOrigin } from '../auth/principal';
import type { AppEnv, Env, GlobalDb, ShardDb } from '../env';
import type { RequestBody } from '../routes/openapi';
import type { StepKind } from '../workflows/interpreter';

/** What an operation runs with, whichever surface called it: the database, the bindings and who acts. */
export interface CapabilityContext {
  /** The shard of the actor's workspace. */
  db: ShardDb;
  /** The global database (credentials, ledger, directory). */
  globalDb: GlobalDb;
  env: Env;
  actor: Actor;
  requestId: string;
  /** The client's interface label for executions started here: `api`, `mcp`, `mcp-vscode`, … */
  clientInterface: string;
  /** The service's origin as the caller reached it, for the links an answer carries (poll and approval URLs). */
  baseUrl: string;
  /** Where the call came from (request id, IP, user agent): the audit trail of a caller without a credential. */
  requestOrigin: RequestOrigin;
  /** The channel recorded as the source of executions started here; `api` when unset. */
  source?: 'api' | 'mcp';
  /** The REST caller's Idempotency-Key, for an operation that hands it on to a provider (Stripe). */
  idempotencyKey?: string;
  /** `x-permission-grant`: which one-time grant a scope check spends (spec 5.5); runs send none. */
  grantToken?: string;
  /** Keeps work going after the answer is sent (REST: the request's execution context); absent where a surface cannot. */
  waitUntil?: (work: Promise<unknown>) => void;
  /** Aborts when the caller has gone (an MCP call followed on its stream): long work it follows stops following. */
  signal?: AbortSignal;
  /** In a run, the tool call this is (workers/services/run-tool-calls.ts): an effect in D1 is made once for it, however often a cut-off turn makes the call. */
  toolCallKey?: string;
}

/** How a tool reports the work it started to a client that sent a `progressToken`. */
export interface ProgressReport {
  /** `notifications/progress`; `done` must grow from one call to the next. */
  progress(done: number, message: string): Promise<void>;
  /** The run's text as it streams, as a `notifications/message` at level info (if the client's level lets it through). */
  log(text: string): Promise<void>;
}

type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * The operation as a REST route, under its area's mount path. Path parameters, the mount's
 * included, fill the input fields of the same name (or those `params` names); the other fields come from the query of a
 * GET or DELETE and from the JSON body otherwise, unless `query` or `body` gives the wire shape
 * (a schema whose output is those fields; a DELETE with `body` reads them from its JSON body).
 */
export interface HttpView<Output> {
  method: HttpMethod;
  path: string;
  /** The OpenAPI summary; the capability's description when omitted. */
  summary?: string;
  /** 202: the operation started work that goes on after the answer (a job). */
  status?: 200 | 201 | 202;
  params?: Record<string, string>;
  query?: z.ZodType;
  body?: z.ZodType;
  /** Middleware that runs before validation, e.g. an error shape the spec fixes for this route. */
  before?: MiddlewareHandler[];
  /**
   * The OpenAPI description of a body the validators cannot describe (one of several shapes,
   * told apart by `body`'s transform): `body` then only checks the request.
   */
  requestBody?: RequestBody;
  /** For an answer that is not the output as JSON (bytes, a redirect): the response, and the schema that documents it. */
  respond?: { schema: z.ZodType; send: (c: Context<AppEnv>, output: Output) => Response };
}

/** A failure an operation answers in its own shape (workflow resume): the MCP tool error carries that body as is. */
export class ToolFailure extends Error {
  constructor(readonly body: object) {
    super('tool failure');
  }
}

/**
 * The operation as an MCP tool of another shape: the part of the input it takes (`args`), an
 * answer other than the output (e.g. bytes as text or base64; `present` may throw ToolFailure),
 * and for an operation that starts long work, how a call with a `progressToken` follows it
 * before answering.
 */
export interface McpView<Output> {
  args?: z.ZodObject;
  output?: z.ZodObject;
  present?: (ctx: CapabilityContext, output: Output) => Promise<object>;
  /**
   * For an operation that starts long work: when the call carried a `progressToken`, reports on
   * that work until it ends, before the answer is sent (the response is then an SSE stream).
   */
  follow?: (ctx: CapabilityContext, output: Output, report: ProgressReport) => Promise<void>;
  /**
   * The tool is listed, but its scope is left out of what an MCP client asks for at sign-in
   * (MCP_STARTING_SCOPES): an OAuth client is given it through the step-up challenge when it
   * first calls the tool. For a scope that allows far more than the tool (`profile:write` also
   * creates API keys and workspaces), which would otherwise join every MCP client's grant.
   */
  stepUp?: true;
}

/**
 * What a run tool takes from its run besides the actor, by the runs it is offered to: every run,
 * a chat turn answering a thread (whose caller may launch workflows), a run started with a
 * GitHub repository.
 */
export interface RunBindings {
  all: Record<string, never>;
  thread: { threadId: string };
  repository: { repo: string };
}
export type RunOffer = keyof RunBindings;

export interface AgentToolViewFor<Input, Output, Offer extends RunOffer, Args extends z.ZodObject = z.ZodObject> {
  offeredTo: Offer;
  name: string;
  /** What the model reads; for a tool bound to its run's thread or repository, it may name it. */
  description: string | ((run: RunBindings[Offer]) => string);
  displayName: string;
  label: (args: Record<string, unknown>, run: RunBindings[Offer]) => string;
  /** The part of the operation's input the model gives (all of it when omitted). */
  args?: Args;
  /** The model's error for an argument that does not parse, by argument name; zod's account of the others. */
  invalid?: Record<string, string>;
  input?: (args: z.output<Args>, run: RunBindings[Offer]) => Input;
  /** The text the model gets back; an AppError it throws is the model's tool error, with its message. */
  answer: (output: Output) => string;
}

/**
 * The operation as a tool a model calls during a run, acting for the run's launcher: the runs it
 * is offered to, its name as models see it, the part of the input it asks for (`input` maps it,
 * with what the run binds, to the operation's input) and the short text the model gets back.
 */
export type AgentToolView<Input, Output, Args extends z.ZodObject = z.ZodObject> = {
  [Offer in RunOffer]: AgentToolViewFor<Input, Output, Offer, Args>;
}[RunOffer];

export type Annotations = Required<Pick<ToolAnnotations, 'readOnlyHint' | 'destructiveHint' | 'idempotentHint' | 'openWorldHint'>>;

/**
 * One operation of the service, declared once: who may call it, its input and output, and what
 * it does over typed input. The REST route, the route-to-scope table, the OpenAPI document, the
 * MCP tool and the agent-run tool are views of this declaration (workers/capabilities/index.ts
 * lists them all).
 */
export interface Capability<Input extends z.ZodObject = z.ZodObject, Output extends z.ZodType = z.ZodType, ToolArgs extends z.ZodObject = Input> {
  /** The MCP tool name (kebab-case). */
  name: string;
  title: string;
  description: string;
  access: RouteAccess;
  input: Input;
  output: Output;
  annotations: Annotations;
  // A method, so that a list of capabilities with different inputs type-checks.
  run(ctx: CapabilityContext, input: z.output<Input>): Promise<z.output<Output>>;
  http?: HttpView<z.output<Output>>;
  /** false: not an MCP tool; an object: a tool whose answer is presented differently. */
  mcp?: false | McpView<z.output<Output>>;
  agentTool?: AgentToolView<z.output<Input>, z.output<Output>, ToolArgs>;
  workflowStep?: WorkflowStepView<z.output<Output>>;
}

/**
 * The operation as a workflow `tool` step, whose `toolId` is the capability's name unless the
 * view names another; `kind` says how a run carries the step out (workers/workflows/interpreter.ts).
 */
export type WorkflowStepView<Output> =
  /** Runs at once for the run's launcher, with no input; `output` makes the step's output of the operation's. */
  | { kind: Extract<StepKind, 'read'>; output: (output: Output) => Record<string, unknown> }
  /** Starts an execution from the step's input, which the step waits for. */
  | { kind: Extract<StepKind, 'execution'>; start: (ctx: CapabilityContext, input: unknown) => Promise<{ executionId: string }> }
  /** Suspends the run until this operation supplies the step's output. */
  | { kind: Extract<StepKind, 'input'>; toolId: string };

/** The tool id a capability's workflow-step view names: its own name, or the one an input step waits under. */
export const stepToolIdOf = (capability: Capability): string => (capability.workflowStep?.kind === 'input' ? capability.workflowStep.toolId : capability.name);

export const defineCapability = <Input extends z.ZodObject, Output extends z.ZodType, ToolArgs extends z.ZodObject = Input>(
  capability: Capability<Input, Output, ToolArgs>,
): Capability => capability as unknown as Capability;

/** The operations of one resource: the REST mount path they share and their OpenAPI tag. */
export interface Area {
  mount: string;
  tag: string;
  capabilities: Capability[];
}

export const READ_ONLY: Annotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
/** A change inside the service that adds or updates, and is not safe to repeat blindly. */
export const WRITE: Annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };

/** The path a router's route answers at under `mount`, as Hono joins them (a router's `/` is the mount itself). */
export const mountedPath = (mount: string, path: string) => (path === '/' ? mount : `${mount}${path}`);

/** How a capability's REST view is named in the docs, e.g. `GET /api/v1/memory`. */
export const capabilityRouteKey = (area: Area, http: HttpView<unknown>) => `${http.method} ${mountedPath(area.mount, http.path)}`;
