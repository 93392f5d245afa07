import { agentPermissionsArea } from '../capabilities/agent-permissions';
import { capabilityRoutes } from '../capabilities/rest';

export const agentPermissionsRoutes = capabilityRoutes(agentPermissionsArea);
