import { workspacesArea } from '../capabilities/account';
import { capabilityRoutes } from '../capabilities/rest';

export const workspacesRoutes = capabilityRoutes(workspacesArea);
