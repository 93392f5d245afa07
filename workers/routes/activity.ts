import { activityArea } from '../capabilities/activity';
import { capabilityRoutes } from '../capabilities/rest';

export const activityRoutes = capabilityRoutes(activityArea);
