import { executionsArea } from '../capabilities/executions';
import { capabilityRoutes } from '../capabilities/rest';

export const executionsRoutes = capabilityRoutes(executionsArea);
