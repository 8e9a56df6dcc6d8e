import type { TSchema } from "@sinclair/typebox";
import type { RosterPaths } from "../ground/config/paths.ts";

/**
 * An executor carries out one kind of approved proposal, on the host, with
 * credentials from the vault that never enter a box. It declares the payload
 * it accepts (checked before anything is filed), says in one line what it
 * would do, renders exactly what it would send (the approval desk shows that),
 * and runs.
 */
export interface ExecutionContext {
  paths: RosterPaths;
  worker: string;
  /** Stable across retries of one approval: a dedupe key for the far side. */
  key: string;
  /** The run that proposed it, when one did. */
  runId?: string | null;
}

export interface Executor<Payload = unknown> {
  schema: TSchema;
  summary(payload: Payload): string;
  /** Given where it would land, an edit renders as a diff of the file as it is now. */
  render(payload: Payload, context?: Omit<ExecutionContext, "key">): string;
  /** A refusal known before anything is filed (a stale base, say), as "field: reason". */
  precheck?(
    payload: Payload,
    context: Omit<ExecutionContext, "key">,
  ): string | undefined | Promise<string | undefined>;
  /** A reason this proposal waits for a human whatever trust says (a bulk delete, say). */
  mustGate?(
    payload: Payload,
    context: Omit<ExecutionContext, "key">,
  ): string | undefined | Promise<string | undefined>;
  run(payload: Payload, context: ExecutionContext): Promise<Record<string, unknown>>;
}
