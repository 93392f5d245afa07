import { auditLogsArea } from '../capabilities/activity';
import { capabilityRoutes } from '../capabilities/rest';

export const auditLogsRoutes = capabilityRoutes(auditLogsArea);
