import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { notFound, workspaceMoving } from '../errors';
import { useShard } from '../middleware/request-context';
import { placeOf } from '../services/directory';
import { DeliveryIgnored, receiveDelivery } from '../services/trigger-delivery';
import { workspaceOfTrigger } from '../services/workflow-triggers';
import { Launched } from '../services/workflow-runs';
import { documentedAnswers } from './openapi';

/**
 * The public trigger URLs (docs/workflows.md, Triggers), mounted at TRIGGER_PATH, outside
 * /api/v1: no API credential, the trigger's secret proves the sender. The trigger id carries its
 * workspace, whose shard the directory names.
 */
export const triggerRoutes = new Hono<AppEnv>().post(
  '/:triggerId',
  documentedAnswers(
    'Workflows',
    'Launch a run from a trigger URL: a Standard Webhooks signed POST or the bearer secret, the JSON body the input; or GitHub’s webhook delivery, the input built from the event',
    {
      202: { schema: Launched, description: 'The run started (or, for a replayed delivery id, started before)' },
      200: { schema: DeliveryIgnored, description: 'A GitHub trigger: a ping, or an event it did not ask for; no run' },
    },
  ),
  async (c) => {
    const triggerId = c.req.param('triggerId');
    const workspaceId = workspaceOfTrigger(triggerId);
    const place = workspaceId === null ? undefined : await placeOf(c.var.globalDb, workspaceId);
    if (workspaceId === null || !place) throw notFound('Trigger');
    // A launch writes: while a move fences the workspace the sender is asked to retry, as a write through the API is.
    if (place.movingTo !== null) throw workspaceMoving();
    useShard(c, place.shard);
    // The signature covers the exact bytes, so the body is read raw, never parsed first (GitHub may send it as a form).
    const answer = await receiveDelivery(c.var.db, c.env, workspaceId, triggerId, {
      body: new TextDecoder().decode(await c.req.arrayBuffer()),
      headers: c.req.raw.headers,
      origin: c.var.origin,
    });
    return 'runId' in answer ? c.json(answer, 202) : c.json(answer, 200);
  },
);
