import { secretsArea } from '../capabilities/secrets';
import { capabilityRoutes } from '../capabilities/rest';

export const secretsRoutes = capabilityRoutes(secretsArea);
