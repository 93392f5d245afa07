import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { principalOf } from '../middleware/authenticate';
import { BalanceStatus, getBalance, listTransactions, Transaction } from '../services/credits';
import { documented } from './openapi';

/** The caller's credits (spec 4.9; the billing issue adds packs, purchases and tiers). */
export const billing = new Hono<AppEnv>()
  .get('/balance', documented('Billing', 'Balance, total spent and whether a run can start', 200, BalanceStatus), async (c) =>
    c.json(await getBalance(c.var.db, principalOf(c))),
  )
  .get('/transactions', documented('Billing', 'The 50 most recent transactions, newest first', 200, z.object({ transactions: z.array(Transaction) })), async (c) =>
    c.json(await listTransactions(c.var.db, principalOf(c))),
  );
