import { userFailure } from "../ground/errors.ts";

/**
 * A command's failure as the CLI shows it: one line (and its hint) for a
 * failure the user can act on, and its exit status. Anything else is a bug
 * and goes on up with its stack.
 */
export function failureStatus(error: unknown): number {
  const failure = userFailure(error);
  if (!failure) throw error;
  process.stderr.write(`roster: ${failure.message}\n`);
  if (failure.hint) process.stderr.write(`  ${failure.hint}\n`);
  return failure.exitCode;
}
