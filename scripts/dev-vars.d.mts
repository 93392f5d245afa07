/** Writes .dev.vars unless it exists; answers whether it wrote it. */
export function ensureDevVars(): boolean;
