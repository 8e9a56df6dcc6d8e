import { type Static, Type } from "@sinclair/typebox";
import { WORKER_NAME_PATTERN } from "./worker-name.ts";

/**
 * A policy test: `[[test]]` in org.toml or a worker.toml — one request and
 * what the door must do with it. `roster validate` asks each of the door's
 * own ruling (boundary/gateway/policy/) and exits 2 on the first it gets
 * wrong, naming the file, line and case, so an edit to the grants is tested
 * before it is trusted.
 */
export const PolicyTest = Type.Object(
  {
    /** A method and an absolute URL: "GET https://api.github.com/user". */
    request: Type.String({
      pattern: "^[A-Za-z]+ https?://\\S+$",
      description: 'a method and an absolute URL, e.g. "GET https://api.github.com/user"',
    }),
    /** Whose run sends it: required in org.toml, the worker's own in a worker.toml. */
    worker: Type.Optional(Type.String({ pattern: WORKER_NAME_PATTERN })),
    /** The channel the run started from. */
    channel: Type.Optional(Type.String({ minLength: 1 })),
    headers: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String())),
    /** A body, read from this file (relative to the file the test is in). */
    body_file: Type.Optional(Type.String({ minLength: 1 })),
    expect: Type.Union([
      Type.Literal("allow"),
      Type.Literal("deny"),
      Type.Literal("gate"),
      Type.Literal("action"),
    ]),
    /** The rule that must decide it. */
    rule: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);
export type PolicyTest = Static<typeof PolicyTest>;

/** A test as the loader found it: where it is written, and whose run sends it. */
export interface PlacedTest {
  test: PolicyTest;
  file: string;
  line: number;
  /** Its place among its file's `[[test]]` tables, from 0. */
  index: number;
  worker: string;
}
