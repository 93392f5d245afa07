import { BalanceStatus, getBalance } from '../../services/credits';
import { READ_ONLY } from '../../capabilities/capability';
import { defineTool } from '../tool';

export const billingTools = [
  defineTool({
    name: 'get-credit-balance',
    title: 'Get credit balance',
    description: 'Shows the caller’s credits in Ds: balance, total spent, whether a run can start (50 Ds available) and whether the account is an admin.',
    route: 'GET /api/v1/billing/balance',
    input: {},
    output: BalanceStatus,
    annotations: READ_ONLY,
    run: (ctx) => getBalance(ctx.db, ctx.actor),
  }),
];
