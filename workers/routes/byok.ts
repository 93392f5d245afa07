import { byokArea } from '../capabilities/billing';
import { capabilityRoutes } from '../capabilities/rest';

export const byokRoutes = capabilityRoutes(byokArea);
