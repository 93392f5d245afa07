import type { Actor } from '../auth/actor';

/** What launch hands a new run. The graph and inputs travel as JSON text (RPC types cannot carry recursive JSON). */
export interface StartInput {
  runId: string;
  workspaceId: string;
  workflowId: string;
  /**
   * Who the steps act for: the launching credential (its kind and id, read again before each
   * step) and the scopes it held at launch, which no step exceeds.
   */
  actor: Actor;
  workflow: string;
  initData: string;
  threadId?: string | null;
  /** The run's concurrency key, filled from its inputs, when its workflow declares `concurrency`: it starts queued. */
  concurrencyKey?: string | null;
  /** The schedule that launched it: told when the run ends, so a fire waiting behind it (`queue_one`) starts then. */
  scheduleId?: string | null;
  /** A rerun: the run it reruns and the step it starts from, and (JSON of RerunFrom) where it starts and what it keeps. */
  rerunOf?: RerunOf;
  from?: string;
}

/** The run a rerun reruns, and the top-level step it started from. */
export interface RerunOf {
  runId: string;
  fromStep: string;
}
