import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../workers/env';
import { advanceExport, type ExportRef } from '../workers/services/export-job';

/** A slice that failed is tried again after this. */
const RETRY_MS = 30_000;

/**
 * One per workspace export, addressed by the export's id (`exp_<n>`): writes its archive in
 * slices (workers/services/export-job.ts) from its alarm, which outlives restarts and crashes;
 * each slice goes on from the checkpoint the previous one wrote in this object's storage. Once
 * the job has ended it deletes its own storage.
 */
export class WorkspaceExport extends DurableObject<Env> {
  /** Starts writing the archive (again, if it stalled): an alarm now, unless one is due. */
  async begin(workspaceId: string, exportId: number): Promise<void> {
    if (this.ctx.storage.kv.get('job') === undefined) this.ctx.storage.kv.put('job', { workspaceId, exportId } satisfies ExportRef);
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now());
  }

  override async alarm(): Promise<void> {
    let againInMs: number;
    try {
      const progress = await advanceExport(this.env, this.ctx.storage);
      if (progress.done) return;
      againInMs = progress.againInMs;
    } catch (error) {
      const job = this.ctx.storage.kv.get<ExportRef>('job');
      console.error(
        JSON.stringify({ level: 'error', message: 'a workspace export slice failed; it is tried again', exportId: job?.exportId, error: String(error) }),
      );
      againInMs = RETRY_MS;
    }
    await this.ctx.storage.setAlarm(Date.now() + againInMs);
  }
}
