import type { GlobalDb } from '../../workers/env';
import { holdAnswered, holdStatements, type Hold, type HoldRequest } from '../../workers/services/credits';

/** A credit hold in a D1 batch of its own (a run's start reads the user's model key in the same batch). */
export const reserveCredits = async (db: GlobalDb, request: HoldRequest): Promise<Hold> =>
  holdAnswered(db, request, await db.batch(holdStatements(db, request)));
