import { is } from 'drizzle-orm';
import { getTableConfig, SQLiteTable } from 'drizzle-orm/sqlite-core';
import * as shardSchema from '../../schema/shard';
import { runToolCalls, shardIdentity } from '../../schema/shard';

/**
 * How a shard table's rows are found by workspace: by its own `workspace_id`, or through the
 * parent row its foreign key names (trace_segments and trace_turns through traces,
 * thread_messages through threads, workflow_step_results through workflow_runs).
 */
export interface WorkspaceTable {
  name: string;
  columns: string[];
  /** The columns holding text (JSON included): where an account deletion looks for the person's id and email. */
  text: string[];
  /** The primary key's columns: how a row is matched between two shards. */
  key: string[];
  /** For a table without `workspace_id`: the parent holding it and the join. */
  parent?: { name: string; column: string; parentColumn: string };
}

/** Tables that are not a workspace's: the shard's stamp, and run tool-call keys (moved apart, workspace-move.ts). */
const NOT_BY_WORKSPACE = new Set<SQLiteTable>([shardIdentity, runToolCalls]);

const isTable = (value: unknown): value is SQLiteTable => is(value, SQLiteTable);

function describe(table: SQLiteTable): WorkspaceTable & { parents: string[] } {
  const config = getTableConfig(table);
  const columns = config.columns.map((c) => c.name);
  const text = config.columns.filter((c) => c.getSQLType() === 'text').map((c) => c.name);
  const composite = config.primaryKeys[0]?.columns.map((c) => c.name);
  const key = composite ?? config.columns.filter((c) => c.primary).map((c) => c.name);
  const references = config.foreignKeys.map((fk) => fk.reference());
  const parents = references.map((ref) => getTableConfig(ref.foreignTable).name);
  if (columns.includes('workspace_id')) return { name: config.name, columns, text, key, parents };
  const owner = references.find((ref) => getTableConfig(ref.foreignTable).columns.some((c) => c.name === 'workspace_id'));
  if (!owner) throw new Error(`Shard table ${config.name} has neither workspace_id nor a parent that has one: a move cannot find its rows`);
  return {
    name: config.name,
    columns,
    text,
    key,
    parents,
    parent: { name: getTableConfig(owner.foreignTable).name, column: owner.columns[0]!.name, parentColumn: owner.foreignColumns[0]!.name },
  };
}

/** Every table holding a workspace's rows, parents before the children that reference them. */
export const WORKSPACE_TABLES: readonly WorkspaceTable[] = (() => {
  const described = (Object.values(shardSchema) as unknown[])
    .filter(isTable)
    .filter((table) => !NOT_BY_WORKSPACE.has(table))
    .map(describe);
  const ordered: WorkspaceTable[] = [];
  const placed = new Set<string>();
  while (ordered.length < described.length) {
    const next = described.filter((t) => !placed.has(t.name) && t.parents.every((p) => placed.has(p) || p === t.name));
    if (next.length === 0) throw new Error('Shard tables reference each other in a cycle');
    for (const table of next) {
      ordered.push({ name: table.name, columns: table.columns, text: table.text, key: table.key, ...(table.parent ? { parent: table.parent } : {}) });
      placed.add(table.name);
    }
  }
  return ordered;
})();
