import { marketplaceArea } from '../capabilities/marketplace';
import { capabilityRoutes } from '../capabilities/rest';

export const marketplaceRoutes = capabilityRoutes(marketplaceArea);
