import { LockBusy } from "./files/file-lock.ts";

/**
 * A failure the user can act on: one legible line, and the exit status the CLI
 * should return. Anything else that reaches the top is a bug and prints a stack.
 */
export class RosterError extends Error {
  readonly exitCode: number;
  readonly hint: string | undefined;

  constructor(
    message: string,
    options: { exitCode?: number; hint?: string; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "RosterError";
    this.exitCode = options.exitCode ?? 1;
    this.hint = options.hint;
  }
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

/**
 * The failure as one the user can act on, or undefined for a bug: ours, or a
 * lock that a live process holds (the ground floor knows no RosterError).
 */
export function userFailure(error: unknown): RosterError | undefined {
  if (error instanceof RosterError) return error;
  if (error instanceof LockBusy) return new RosterError(error.message, { cause: error });
  return undefined;
}
