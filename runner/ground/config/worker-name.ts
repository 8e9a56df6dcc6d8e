/**
 * What a worker may be called: the folder under workers/, the `name` in its
 * worker.toml, the `org/<worker>` subject. One rule, said once, so the loader,
 * `roster worker add` and every command that takes a worker refuse the same
 * names with the same words.
 */
export const WORKER_NAME_PATTERN = "^[a-z0-9][a-z0-9_-]*$";

/** What a name (worker, credential, connection) may be made of, as an error says it. */
export const NAME = "lower-case letters, digits, '_' or '-'";

export const WORKER_NAME_RULE =
  "lower-case letters, digits, '_' or '-', starting with a letter or digit";

/** Names the loader keeps for itself: `org` is the scope of every worker. */
export const RESERVED_WORKER_NAMES: readonly string[] = ["org"];

const PATTERN = new RegExp(WORKER_NAME_PATTERN);

/** Why `name` can't name a worker, in one line; undefined when it can. */
export function workerNameProblem(name: string): string | undefined {
  if (!PATTERN.test(name)) return `"${name}" is not a worker name: ${WORKER_NAME_RULE}`;
  if (RESERVED_WORKER_NAMES.includes(name))
    return `"${name}" is reserved (the scope of every worker); pick another name`;
  return undefined;
}
