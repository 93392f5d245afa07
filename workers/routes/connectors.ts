import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { principalOf } from '../middleware/authenticate';
import { validate } from '../middleware/validate';
import {
  ConnectBody,
  connectConnector,
  ConnectorList,
  ConnectorStatus,
  connectorStatus,
  ConnectorType,
  disconnectConnector,
  listConnectors,
} from '../services/connectors';
import { documented } from './openapi';

const TypeParam = z.object({ type: ConnectorType });

/** Connector connections per workspace (docs/connectors.md). */
export const connectorsRoutes = new Hono<AppEnv>()
  .get('/', documented('Connectors', 'Every connector type: what it reads and does, and its state in this workspace', 200, ConnectorList), async (c) =>
    c.json(await listConnectors(c.var.db, c.env, principalOf(c))),
  )
  .post(
    '/:type/connect',
    documented(
      'Connectors',
      'Connect with a token the provider accepts (stored encrypted, never shown again); needs connector:<app>:exec too',
      200,
      ConnectorStatus,
    ),
    validate('param', TypeParam),
    validate('json', ConnectBody),
    async (c) => c.json(await connectConnector(c.var.db, c.env, principalOf(c), c.req.valid('param').type, c.req.valid('json'))),
  )
  .post(
    '/:type/disconnect',
    documented('Connectors', 'Forget the workspace’s token (a no-op when not connected); needs connector:<app>:exec too', 200, ConnectorStatus),
    validate('param', TypeParam),
    async (c) => c.json(await disconnectConnector(c.var.db, c.env, principalOf(c), c.req.valid('param').type)),
  )
  .get(
    '/:type/status',
    documented('Connectors', 'The connection’s state, checked with the provider when a token is stored', 200, ConnectorStatus),
    validate('param', TypeParam),
    async (c) => c.json(await connectorStatus(c.var.db, c.env, principalOf(c), c.req.valid('param').type)),
  );
