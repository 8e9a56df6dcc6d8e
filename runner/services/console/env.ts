/**
 * What every console route shares: the form the guard parsed (app.ts checks
 * the CSRF token in it before any route sees it), and the shape of a worker's
 * name in an address.
 */
export type ConsoleEnv = { Variables: { form: Record<string, unknown> } };

export const WORKER_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
