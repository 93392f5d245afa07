import { and, asc, eq } from 'drizzle-orm';
import { z } from 'zod';
import { agents, type AgentRow } from '../../schema/shard/workflows';
import type { Principal } from '../auth/principal';
import type { ShardDb } from '../env';
import { now, toIso } from '../lib/clock';
import { recordChange } from './audit';

/** Agent slugs: kebab-case, as workflow ids. */
export const AgentSlug = z
  .string()
  .regex(/^[a-z0-9]+(?:-[a-z0-9]+)*$/, 'kebab-case: lower-case letters, digits and single hyphens')
  .max(64);

export const CreateAgentBody = z.object({
  slug: AgentSlug,
  name: z.string().trim().min(1).max(200),
  instructions: z.string().trim().min(1).max(100_000),
  model: z.string().trim().min(1).max(100).optional(),
});
export type CreateAgentBody = z.infer<typeof CreateAgentBody>;

export const AgentRecord = z.object({
  id: z.string(),
  slug: z.string(),
  name: z.string(),
  instructions: z.string(),
  model: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type AgentRecord = z.infer<typeof AgentRecord>;

/** An agent id is `<workspace_id>:<agent_slug>`. */
const present = (row: AgentRow): AgentRecord => ({
  id: `${row.workspaceId}:${row.slug}`,
  slug: row.slug,
  name: row.name,
  instructions: row.instructions,
  model: row.model,
  createdAt: toIso(row.createdAt),
  updatedAt: toIso(row.updatedAt),
});

export async function listAgents(db: ShardDb, principal: Principal): Promise<AgentRecord[]> {
  const rows = await db.select().from(agents).where(eq(agents.workspaceId, principal.workspaceId)).orderBy(asc(agents.slug));
  return rows.map(present);
}

/** The workspace's agent slugs: what the workflow compiler resolves `agentId`s against. */
export async function agentSlugs(db: ShardDb, workspaceId: string): Promise<Set<string>> {
  const rows = await db.select({ slug: agents.slug }).from(agents).where(eq(agents.workspaceId, workspaceId));
  return new Set(rows.map((r) => r.slug));
}

export async function findAgent(db: ShardDb, workspaceId: string, slug: string): Promise<AgentRow | null> {
  const [row] = await db
    .select()
    .from(agents)
    .where(and(eq(agents.workspaceId, workspaceId), eq(agents.slug, slug)))
    .limit(1);
  return row ?? null;
}

/** Creates the agent, or replaces the one with the same slug (its id stays the same). */
export async function saveAgent(db: ShardDb, principal: Principal, input: CreateAgentBody): Promise<AgentRecord> {
  const t = now();
  const values = { name: input.name, instructions: input.instructions, model: input.model ?? null, updatedAt: t };
  const [[row]] = await db.batch([
    db
      .insert(agents)
      .values({ workspaceId: principal.workspaceId, slug: input.slug, ...values, createdAt: t })
      .onConflictDoUpdate({ target: [agents.workspaceId, agents.slug], set: values })
      .returning(),
    ...recordChange(db, principal, {
      action: 'agent.saved',
      resourceType: 'agent',
      resourceId: `${principal.workspaceId}:${input.slug}`,
      metadata: { slug: input.slug, name: input.name },
      activity: `Agent ${input.name} was saved`,
    }),
  ]);
  return present(row!);
}
