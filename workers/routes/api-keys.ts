import { apiKeysArea } from '../capabilities/account';
import { capabilityRoutes } from '../capabilities/rest';

export const apiKeysRoutes = capabilityRoutes(apiKeysArea);
