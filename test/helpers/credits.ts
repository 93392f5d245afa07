import type { GlobalDb } from '../../workers/env';
import {
  holdAnswered,
  holdStatements,
  settlementAnswered,
  settlementStatements,
  type Hold,
  type HoldRequest,
  type Settlement,
} from '../../workers/services/credits';

/** A credit hold in a D1 batch of its own (a run's start sends the same statements inside its claim's batch). */
export const reserveCredits = async (db: GlobalDb, request: HoldRequest): Promise<Hold> =>
  holdAnswered(db, request, await db.batch(holdStatements(db, request)));

/** A settlement in a D1 batch of its own (a turn's close sends the same statements with its record). */
export const settleExecution = async (db: GlobalDb, settlement: Settlement) =>
  settlementAnswered(db, settlement, await db.batch(settlementStatements(db, settlement).statements));
