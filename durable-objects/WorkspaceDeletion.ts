import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../workers/env';
import { advanceDeletion } from '../workers/services/workspace-erasure';

/** A step that failed is tried again after this. */
const RETRY_MS = 30_000;

/**
 * One per workspace being deleted, addressed by the workspace id: drives its deletion
 * (workers/services/workspace-erasure.ts) from its alarm, which outlives restarts and crashes;
 * the job's progress is in the global database, so the object holds only the workspace id and
 * the alarm. Once the deletion completes it deletes its own storage.
 */
export class WorkspaceDeletion extends DurableObject<Env> {
  /** Starts driving the deletion (again, if it stalled): an alarm now, unless one is due. */
  async begin(workspaceId: string): Promise<void> {
    this.ctx.storage.kv.put('workspace', workspaceId);
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now());
  }

  override async alarm(): Promise<void> {
    const workspaceId = this.ctx.storage.kv.get<string>('workspace');
    if (workspaceId === undefined) return;
    let againInMs: number;
    try {
      const progress = await advanceDeletion(this.env, workspaceId);
      if (progress.done) {
        await this.ctx.storage.deleteAll();
        return;
      }
      againInMs = progress.againInMs;
    } catch (error) {
      console.error(JSON.stringify({ level: 'error', message: 'a workspace deletion step failed; it is tried again', workspaceId, error: String(error) }));
      againInMs = RETRY_MS;
    }
    await this.ctx.storage.setAlarm(Date.now() + againInMs);
  }
}
