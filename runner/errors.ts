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
