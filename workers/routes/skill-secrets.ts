import { capabilityRoutes } from '../capabilities/rest';
import { skillSecretsArea } from '../capabilities/skills';

/** Mounted at `/api/v1/skills/:slug/secrets`: Hono hands the mount path's `:slug` to these handlers. */
export const skillSecretsRoutes = capabilityRoutes(skillSecretsArea);
