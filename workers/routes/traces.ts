import { tracesArea } from '../capabilities/traces';
import { capabilityRoutes } from '../capabilities/rest';

export const tracesRoutes = capabilityRoutes(tracesArea);
