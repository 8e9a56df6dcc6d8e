import { type Static, Type } from "@sinclair/typebox";
import { ChannelClass } from "./channel-class-schema.ts";
import { ExecutorField } from "./chat-schema.ts";

/**
 * What a worker may propose and who decides: `[[action]]` grants name an
 * intent and the executor that carries it out; `[[trust]]` rules say which
 * proposals run at once and which wait for a human. Both live in org.toml; a
 * worker.toml may only add `[[trust]]` rules that gate (narrowing), never an
 * action grant. An executor is the action host's own or a chat platform's
 * (chat-schema.ts).
 */
export const TrustLevel = Type.Union([
  Type.Literal("auto"),
  Type.Literal("gate"),
  Type.Literal("earned"),
]);
export type TrustLevel = Static<typeof TrustLevel>;

const IntentName = Type.String({ pattern: "^[a-z][a-z0-9-]*$" });
const WorkerNames = Type.Array(Type.String({ pattern: "^[a-z0-9][a-z0-9_-]*$" }), { minItems: 1 });

export const ActionGrant = Type.Object(
  {
    /** The intent a box tool submits, e.g. "email-send". */
    name: IntentName,
    executor: ExecutorField,
    /** When no [[trust]] rule decides: gate (default), auto, or earned. */
    trust: Type.Optional(TrustLevel),
    /** For earned trust: executed gates (with no denial) before it runs unasked. */
    after: Type.Optional(Type.Integer({ minimum: 1 })),
    /** When a gate of this intent is decided, file a task so the worker picks up where it stopped. */
    wake_on_resolve: Type.Optional(Type.Boolean()),
    /** Only these workers (org.toml); every worker when absent. */
    workers: Type.Optional(WorkerNames),
    /** Only for runs started from these channels (channel-class-schema.ts). */
    channels: Type.Optional(ChannelClass),
  },
  { additionalProperties: false },
);
export type ActionGrant = Static<typeof ActionGrant>;

export const TrustRule = Type.Object(
  {
    intent: IntentName,
    /** Payload field → anchored `*` glob; every field must hold (a list: every element). */
    match: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String())),
    level: TrustLevel,
    after: Type.Optional(Type.Integer({ minimum: 1 })),
    workers: Type.Optional(WorkerNames),
  },
  { additionalProperties: false },
);
export type TrustRule = Static<typeof TrustRule>;

/** A grant or rule with its scope stamped by the loader (`org` or `org/<worker>`). */
export type Scoped<T> = Omit<T, "workers"> & { scope: string; source: string };
