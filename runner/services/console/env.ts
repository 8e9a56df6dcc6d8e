/**
 * What every console route shares: the form the guard parsed (session.ts
 * checks the session's token in it before any route sees it), the session's
 * token (forms carry it back), and the shape of a worker's name in an address.
 */
export type ConsoleEnv = { Variables: { form: Record<string, unknown>; token: string } };

export const WORKER_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
