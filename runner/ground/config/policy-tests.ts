import type { ConfigError } from "./config-error.ts";
import { locateLine } from "./locate.ts";
import type { PlacedTest, PolicyTest } from "./policy-test-schema.ts";

/**
 * A file's `[[test]]` tables placed: each with its line and the worker whose
 * run sends it. org.toml's name their worker; a worker.toml's are that
 * worker's own runs. A test that says neither is a config error at its line;
 * one naming a worker the config lacks fails when it is run (policy/tests.ts),
 * so a removed worker's tests never make the door's config unusable.
 */
export function placeTests(
  tests: PolicyTest[] | undefined,
  file: string,
  text: string,
  /** The worker a worker.toml's tests belong to; undefined for org.toml. */
  owner: string | undefined,
  errors: ConfigError[],
): PlacedTest[] {
  const placed: PlacedTest[] = [];
  for (const [index, test] of (tests ?? []).entries()) {
    const line = locateLine(text, `/test/${index}`);
    const field = `test.${index}.worker`;
    const worker = test.worker ?? owner;
    if (worker === undefined) {
      errors.push({ file, line, field, message: "name the worker whose run sends this request" });
      continue;
    }
    if (owner !== undefined && worker !== owner) {
      errors.push({
        file,
        line,
        field,
        message: `a worker.toml's tests are its own runs' (found "${worker}"); test other workers in org.toml`,
      });
      continue;
    }
    placed.push({ test, file, line, index, worker });
  }
  return placed;
}
