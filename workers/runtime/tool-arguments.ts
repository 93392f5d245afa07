import { z } from 'zod';
import type { AgentTool } from './agent-loop';

/** Argument schemas already converted, by zod schema: every run offers the same few tools. */
const argumentSchemas = new WeakMap<z.ZodObject, Record<string, unknown>>();

/** JSON Schema of a tool's arguments, for the model (without `$schema`, which some providers refuse); built once per isolate. */
export function argumentSchema(args: z.ZodObject): Record<string, unknown> {
  let schema = argumentSchemas.get(args);
  if (!schema) {
    const { $schema: _dialect, ...rest } = z.toJSONSchema(args, { io: 'input' });
    schema = rest;
    argumentSchemas.set(args, schema);
  }
  return schema;
}

type Checked<Args extends z.ZodObject> = { ok: true; args: z.output<Args> } | { ok: false; refusal: { content: string; isError: true } };

/**
 * A model's arguments checked against the tool's schema. A refusal names the first bad argument
 * in the tool's own words when it has them (`invalid`, by argument name), in zod's otherwise.
 */
export function checkArguments<Args extends z.ZodObject>(schema: Args, raw: unknown, invalid: Record<string, string> = {}): Checked<Args> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return { ok: true, args: parsed.data };
  const field = parsed.error.issues[0]?.path[0];
  const content = (typeof field === 'string' && invalid[field]) || `Invalid input: ${z.prettifyError(parsed.error)}`;
  return { ok: false, refusal: { content, isError: true } };
}

/** A tool of the run's own work (not an operation of the service), its arguments a zod schema the model sees as JSON Schema. */
export interface OwnTool<Args extends z.ZodObject> {
  name: string;
  description: string;
  displayName: string;
  args: Args;
  invalid?: Record<string, string>;
  label: AgentTool['label'];
  run: (args: z.output<Args>, call?: { id: string }) => ReturnType<AgentTool['run']>;
}

export const ownTool = <Args extends z.ZodObject>(tool: OwnTool<Args>): AgentTool => ({
  spec: { name: tool.name, description: tool.description, inputSchema: argumentSchema(tool.args) },
  displayName: tool.displayName,
  label: tool.label,
  run: async (raw, call) => {
    const checked = checkArguments(tool.args, raw, tool.invalid);
    return checked.ok ? tool.run(checked.args, call) : checked.refusal;
  },
});
