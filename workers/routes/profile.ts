import { profileArea } from '../capabilities/account';
import { capabilityRoutes } from '../capabilities/rest';

export const profileRoutes = capabilityRoutes(profileArea);
