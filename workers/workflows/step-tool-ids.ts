/**
 * The tool ids a workflow `tool` entry may name in this deployment (spec 4.8 step 4): those of
 * the capabilities that declare a workflow step. workers/capabilities/index.ts declares them once,
 * as the capabilities load. Install, launch and the published definition schema sit below the
 * capabilities that call them, so they read the ids here rather than import the capabilities.
 */
let declared: ReadonlySet<string> | undefined;

/** Declared in name order, so the published schema lists them the same way whatever the capabilities' order. */
export function declareStepToolIds(ids: Iterable<string>): void {
  declared = new Set([...ids].sort());
}

export function stepToolIds(): ReadonlySet<string> {
  if (!declared) throw new Error('Workflow step tool ids were read before the capabilities declared them');
  return declared;
}
