import type { Db } from '../../workers/env';
import { holdAnswered, holdStatements, type Hold, type HoldRequest } from '../../workers/services/credits';

/** A credit hold in a D1 batch of its own (a run's start sends the same statements inside its claim's batch). */
export const reserveCredits = async (db: Db, request: HoldRequest): Promise<Hold> => holdAnswered(db, request, await db.batch(holdStatements(db, request)));
