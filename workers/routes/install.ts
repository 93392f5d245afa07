import { capabilityRoutes } from '../capabilities/rest';
import { installArea } from '../capabilities/skills';

export const installRoutes = capabilityRoutes(installArea);
