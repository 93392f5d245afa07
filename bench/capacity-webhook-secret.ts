/** The Stripe webhook secret the counting Worker (bench/counting-worker.ts) verifies with, so capacity-measure can sign an event. */
export const CAPACITY_WEBHOOK_SECRET = 'whsec_capacity_measurement';
