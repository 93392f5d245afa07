import { connectorsArea } from '../capabilities/connectors';
import { capabilityRoutes } from '../capabilities/rest';

/** Connector connections per workspace (docs/connectors.md). */
export const connectorsRoutes = capabilityRoutes(connectorsArea);
