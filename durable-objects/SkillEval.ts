import { DurableObject } from 'cloudflare:workers';
import { and, eq, inArray, sql } from 'drizzle-orm';
import { artifacts, executions, skillEvals, type EvalRole, type EvalStatus } from '../schema/shard';
import type { Actor } from '../workers/auth/actor';
import { launcherNow } from '../workers/auth/launcher';
import type { Env, ShardDb } from '../workers/env';
import { AppError } from '../workers/errors';
import { now } from '../workers/lib/clock';
import type { EvalCase } from '../workers/lib/eval-cases';
import { formatId } from '../workers/lib/ids';
import { directoryRoutedShardDb } from '../workers/services/directory-routed';
import { lastTurnText } from '../workers/services/execution-events';
import { gradeCheck, GRADER_SYSTEM, graderInput, readVerdicts, runPassed } from '../workers/services/eval-grading';
import { evalReport, evalTotals, reportText, type EvalUnit, type UnitRun } from '../workers/services/eval-report';
import { startEvalRun } from '../workers/services/executions';
import { settleGuards } from '../workers/services/skill-guard';

/** What starting a job hands its object: everything it runs, so it reads no skill again. */
export interface EvalJob {
  evalId: number;
  actor: Actor;
  slug: string;
  name: string;
  skillVersionId: number;
  cases: EvalCase[];
  /** Each case's run input: its prompt, and the text of its input files. */
  inputs: string[];
  repetitions: number;
  /** Hundredths of a Ds, or null for none. */
  budget: number | null;
  model?: string;
  /** Whether expectations are graded by a model (not on the built-in local one). */
  grade: boolean;
}

/** Where a pass leaves the job; `wait`, for one still running, is how soon to look again. */
type Outcome = { status: Exclude<EvalStatus, 'queued'>; stopReason?: string; wait?: number };

/** Passes in a row that may fail (a D1 or object request) before the job is given up as failed. */
const MAX_FAILED_PASSES = 5;

/** How often running runs are looked at when no end was announced (a lost notice). */
const POLL_MS = 5_000;
/** How soon a start the workspace had no room for (or the per-user start rate refused) is tried again. */
const RETRY_MS = 2_000;
/** An output kept in the report is cut to this many characters; the whole of it stays the execution's. */
const OUTPUT_EXCERPT = 2_000;

const NOT_GRADED = 'Not graded: the built-in local model does not grade expectations; run the eval with a hosted model';

/**
 * Drives one skill eval (docs/skills.md, Evals): each case and repetition run with the skill and
 * without it as ordinary executions, at the workspace's concurrency (a start refused for room or
 * rate waits), each graded once it ends, and the job's row written at every change. Its state is
 * in storage and its alarm polls, so a restart picks up where it was: a start cut off before its
 * execution id was stored adopts the execution of the eval that no unit holds.
 */
export class SkillEval extends DurableObject<Env> {
  private job: EvalJob | undefined;
  private units: EvalUnit[] = [];

  /** Starts the job (idempotent: a second call with the same job changes nothing). */
  async start(job: EvalJob): Promise<void> {
    if (await this.ctx.storage.get('job')) return;
    const units: EvalUnit[] = [];
    for (const [caseIndex] of job.cases.entries()) {
      for (let repetition = 1; repetition <= job.repetitions; repetition++) {
        for (const role of ['skill', 'baseline'] as const) units.push({ n: units.length, caseIndex, repetition, role, phase: 'pending' });
      }
    }
    await this.ctx.storage.put({ job, ...Object.fromEntries(units.map((u) => [`unit:${u.n}`, u])) });
    await this.ctx.storage.setAlarm(now());
  }

  /** A run of the job ended: grade it and start the next now rather than at the next poll. */
  async executionEnded(_executionId: string): Promise<void> {
    await this.tick();
  }

  override async alarm(): Promise<void> {
    await this.tick();
  }

  private async load(): Promise<boolean> {
    if (this.job) return true;
    const entries = await this.ctx.storage.list<EvalJob | EvalUnit>();
    const job = entries.get('job') as EvalJob | undefined;
    if (!job) return false;
    this.job = job;
    this.units = [...entries].flatMap(([key, value]) => (key.startsWith('unit:') ? [value as EvalUnit] : [])).sort((a, b) => a.n - b.n);
    return true;
  }

  private save(unit: EvalUnit) {
    return this.ctx.storage.put(`unit:${unit.n}`, unit);
  }

  /** One pass, one at a time: collect what ended, start what may start, write the row, set the next alarm. */
  private tick(): Promise<void> {
    return this.ctx.blockConcurrencyWhile(async () => {
      if (!(await this.load())) return;
      const job = this.job!;
      const db = directoryRoutedShardDb(this.env, job.actor.workspaceId, job.actor.shard);
      if (!(await this.rowExists(db))) return this.erase();
      if (await this.ctx.storage.get<boolean>('ended')) return this.settle(db);
      let outcome: Outcome;
      try {
        await this.adoptCutOffStarts(db);
        await this.collect(db);
        outcome = await this.startWhatMay(db);
        await this.ctx.storage.delete('failures');
      } catch (error) {
        // Tried again at the next alarm (what was done is stored); a fault that keeps coming fails the job.
        const failures = await this.failedAgain('failures', 'a skill eval pass failed', error);
        outcome =
          failures < MAX_FAILED_PASSES
            ? { status: 'running', wait: RETRY_MS * failures }
            : { status: 'failed', stopReason: error instanceof Error ? error.message : String(error) };
      }
      await this.writeRow(db, outcome);
      if (outcome.status === 'running') return this.ctx.storage.setAlarm(now() + (outcome.wait ?? POLL_MS));
      await this.ctx.storage.put('ended', true);
      await this.settle(db);
    });
  }

  /**
   * The job ended: a version the guard held back on this eval is decided now, then the object
   * forgets the job. A decision that fails is tried again from the alarm (deciding is idempotent),
   * up to MAX_FAILED_PASSES times; past that the version waits for the owner's override.
   */
  private async settle(db: ShardDb): Promise<void> {
    const job = this.job!;
    try {
      await settleGuards(db, job.actor, job.evalId);
    } catch (error) {
      const failures = await this.failedAgain('settleFailures', 'a skill version guard was not settled', error);
      if (failures < MAX_FAILED_PASSES) return this.ctx.storage.setAlarm(now() + RETRY_MS * failures);
    }
    await this.erase();
  }

  /** Counts one more failure in a row under `key` (kept in storage, so a restart keeps counting), logged; answers the count. */
  private async failedAgain(key: 'failures' | 'settleFailures', message: string, error: unknown): Promise<number> {
    const failures = ((await this.ctx.storage.get<number>(key)) ?? 0) + 1;
    console.error(JSON.stringify({ level: 'error', message, evalId: this.job!.evalId, failures, error: String(error) }));
    await this.ctx.storage.put(key, failures);
    return failures;
  }

  /** Deletes the job's storage and alarm: it ended, its skill was uninstalled, or its workspace is being deleted. */
  async erase(): Promise<void> {
    this.job = undefined;
    this.units = [];
    await this.ctx.storage.deleteAll();
    await this.ctx.storage.deleteAlarm();
  }

  private async rowExists(db: ShardDb) {
    const job = this.job!;
    const [row] = await db
      .select({ id: skillEvals.id })
      .from(skillEvals)
      .where(and(eq(skillEvals.workspaceId, job.actor.workspaceId), eq(skillEvals.id, job.evalId)))
      .limit(1);
    return row !== undefined;
  }

  /** A unit left `starting` by a restart takes the eval's execution of its part that no unit holds, or starts again. */
  private async adoptCutOffStarts(db: ShardDb) {
    for (const unit of this.units.filter((u) => u.phase === 'starting' || u.phase === 'grader_starting')) {
      const role: EvalRole = unit.phase === 'grader_starting' ? 'grader' : unit.role;
      const held = new Set(this.units.flatMap((u) => [u.executionId, u.graderExecutionId]).filter((id) => id !== undefined));
      const rows = await db
        .select({ id: executions.id })
        .from(executions)
        .where(and(eq(executions.workspaceId, this.job!.actor.workspaceId), eq(executions.evalId, this.job!.evalId), eq(executions.evalRole, role)));
      const orphan = rows.map((r) => r.id).find((id) => !held.has(id));
      if (unit.phase === 'starting') Object.assign(unit, orphan === undefined ? { phase: 'pending' } : { phase: 'running', executionId: orphan });
      else Object.assign(unit, orphan === undefined ? { phase: 'to_grade' } : { phase: 'grading', graderExecutionId: orphan });
      await this.save(unit);
    }
  }

  /** Grades the runs (and grading runs) that ended since the last pass. */
  private async collect(db: ShardDb) {
    const open = this.units.filter((u) => u.phase === 'running' || u.phase === 'grading');
    if (open.length === 0) return;
    const ids = open.map((u) => (u.phase === 'running' ? u.executionId! : u.graderExecutionId!));
    const rows = await db
      .select()
      .from(executions)
      .where(and(eq(executions.workspaceId, this.job!.actor.workspaceId), inArray(executions.id, ids)));
    for (const unit of open) {
      const id = unit.phase === 'running' ? unit.executionId! : unit.graderExecutionId!;
      const row = rows.find((r) => r.id === id);
      if (row?.status === 'working') continue;
      const ended = row ? await this.endedRun(db, id) : { stopReason: 'removed', text: '', artifacts: [] };
      if (unit.phase === 'running') this.grade(unit, ended);
      else this.readGrades(unit, ended);
      await this.save(unit);
    }
  }

  /** What an ended execution answered, why it stopped and the artifacts it wrote. */
  private async endedRun(db: ShardDb, executionId: number) {
    const events = await this.env.EXECUTION_SESSION.getByName(formatId('exec', executionId)).read(0);
    const idle = events.findLast((e) => e.type === 'session.status_idle');
    const stopReason = (idle?.payload.stop_reason as { type?: string } | undefined)?.type ?? 'error';
    const written = await db
      .select({ name: artifacts.name })
      .from(artifacts)
      .where(and(eq(artifacts.workspaceId, this.job!.actor.workspaceId), eq(artifacts.executionId, executionId)));
    return { stopReason, text: lastTurnText(events), artifacts: written.map((a) => a.name) };
  }

  /** Machine checks at once; expectations by a grading run when there is a model to grade (`to_grade`). */
  private grade(unit: EvalUnit, ended: { stopReason: string; text: string; artifacts: string[] }) {
    const testCase = this.job!.cases[unit.caseIndex]!;
    const expectations = testCase.expectations ?? [];
    const run: UnitRun = {
      stopReason: ended.stopReason,
      output: ended.text.slice(0, OUTPUT_EXCERPT),
      outputChars: ended.text.length,
      checks: [],
      expectations: [],
      passed: null,
    };
    unit.run = run;
    unit.output = ended.text;
    if (ended.stopReason !== 'end_turn') {
      // A run stopped at its budget is left out of the rates; one that failed counts as failed.
      run.passed = ended.stopReason === 'limit_reached' ? null : false;
      run.note = `The run ended with ${ended.stopReason}; it was not graded`;
      unit.phase = 'done';
      return;
    }
    run.checks = (testCase.checks ?? []).map((check) => gradeCheck(check, ended.text, ended.artifacts));
    if (expectations.length > 0 && this.job!.grade) {
      unit.phase = 'to_grade';
      return;
    }
    run.expectations = expectations.map((expectation) => ({ expectation, passed: null, reasoning: NOT_GRADED }));
    run.passed = runPassed(run.checks, run.expectations);
    unit.phase = 'done';
  }

  private readGrades(unit: EvalUnit, ended: { stopReason: string; text: string }) {
    const expectations = this.job!.cases[unit.caseIndex]!.expectations ?? [];
    const run = unit.run!;
    run.expectations =
      ended.stopReason === 'end_turn'
        ? readVerdicts(expectations, ended.text)
        : expectations.map((expectation) => ({ expectation, passed: null, reasoning: `The grading run ended with ${ended.stopReason}` }));
    run.passed = runPassed(run.checks, run.expectations);
    delete unit.output;
    unit.phase = 'done';
  }

  /**
   * Starts grading runs first, then the next runs, until the workspace has no room (tried again
   * soon) or the budget is spent. With a budget one run goes at a time, given what is left of
   * it, so the job never spends more.
   */
  private async startWhatMay(db: ShardDb): Promise<Outcome> {
    const job = this.job!;
    const inFlight = () => this.units.filter((u) => u.phase === 'running' || u.phase === 'grading').length;
    const next = () => this.units.find((u) => u.phase === 'to_grade') ?? this.units.find((u) => u.phase === 'pending');
    // A run stopped at a limit (the job's budget, a spend limit, the balance): no more start.
    const stoppedAtBudget = this.units.some((u) => u.run?.stopReason === 'limit_reached');
    const limitReason = job.budget === null ? 'limit_reached' : 'budget';
    for (let unit = next(); unit && !stoppedAtBudget; unit = next()) {
      let budget: number | undefined;
      if (job.budget !== null) {
        if (inFlight() > 0) return { status: 'running' };
        const left = job.budget - (await evalTotals(db, job.actor.workspaceId, job.evalId)).cost;
        if (left <= 0) return this.stop('budget');
        budget = left;
      }
      const launcher = await launcherNow(this.env, job.actor);
      if (!launcher.ok) return this.stop(launcher.reason, 'failed');
      const grading = unit.phase === 'to_grade';
      unit.phase = grading ? 'grader_starting' : 'starting';
      await this.save(unit);
      try {
        const id = await startEvalRun(db, this.env, launcher.actor, {
          evalId: job.evalId,
          role: grading ? 'grader' : unit.role,
          slug: job.slug,
          name: job.name,
          skillVersionId: job.skillVersionId,
          input: grading ? graderInput(job.cases[unit.caseIndex]!, unit.output ?? '') : job.inputs[unit.caseIndex]!,
          ...(grading ? { system: GRADER_SYSTEM } : unit.role === 'baseline' ? { system: '' } : {}),
          ...(job.model === undefined ? {} : { model: job.model }),
          ...(budget === undefined ? {} : { budget }),
        });
        Object.assign(unit, grading ? { phase: 'grading', graderExecutionId: id } : { phase: 'running', executionId: id });
        await this.save(unit);
      } catch (error) {
        unit.phase = grading ? 'to_grade' : 'pending';
        await this.save(unit);
        const retry = error instanceof AppError && (error.code === 'EXECUTION_RUNNING' || error.status === 503);
        if (retry) return { status: 'running', wait: RETRY_MS };
        // Out of credits, a spend limit, the version gone: the job cannot go on.
        return this.stop(error instanceof Error ? error.message : String(error), 'failed');
      }
    }
    if (inFlight() > 0) return { status: 'running' };
    if (stoppedAtBudget) return this.stop(limitReason);
    const ran = this.units.filter((u) => u.run);
    const allFailed = ran.length > 0 && ran.every((u) => u.run!.passed === false && u.run!.stopReason !== 'end_turn');
    return allFailed ? { status: 'failed', stopReason: 'every run failed' } : { status: 'succeeded' };
  }

  /** Ends the job once nothing is in flight: what has not run is skipped. */
  private async stop(reason: string, status: 'stopped' | 'failed' = 'stopped'): Promise<Outcome> {
    if (this.units.some((u) => u.phase === 'running' || u.phase === 'grading')) return { status: 'running' };
    for (const unit of this.units.filter((u) => u.phase === 'pending' || u.phase === 'to_grade')) {
      if (unit.phase === 'to_grade') unit.run!.passed = runPassed(unit.run!.checks, []);
      unit.phase = unit.phase === 'to_grade' ? 'done' : 'skipped';
      delete unit.output;
      await this.save(unit);
    }
    return { status, stopReason: reason };
  }

  /** The job's row: its report and totals. */
  private async writeRow(db: ShardDb, outcome: Outcome) {
    const job = this.job!;
    const totals = await evalTotals(db, job.actor.workspaceId, job.evalId);
    const report = evalReport(job.cases, this.units);
    const final = outcome.status !== 'running';
    await db
      .update(skillEvals)
      .set({
        status: outcome.status,
        stopReason: outcome.stopReason ?? null,
        passRateWith: report.passRateWith,
        passRateWithout: report.passRateWithout,
        cost: totals.cost,
        inputTokens: totals.inputTokens,
        outputTokens: totals.outputTokens,
        elapsedMs: totals.elapsedMs,
        report: reportText(report.cases),
        ...(final ? { completedAt: sql`${now()}` } : {}),
      })
      .where(and(eq(skillEvals.workspaceId, job.actor.workspaceId), eq(skillEvals.id, job.evalId)));
  }
}
