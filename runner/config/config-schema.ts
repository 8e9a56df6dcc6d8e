import { type Static, Type } from "@sinclair/typebox";
import { BudgetLimit, BudgetMeter, Grant } from "./grant-schema.ts";

/** org.toml: the deployment. Unknown keys are errors, so typos never pass silently. */
export const GatewaySection = Type.Object(
  {
    /** host:port pairs to listen on; default loopback plus the locked network's bridge address. */
    listen: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    /** Extra CA certificates (PEM files) trusted for upstream TLS, beside the system roots. */
    upstream_ca: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    /** Static name → address answers, checked before DNS (like curl --resolve). */
    resolve: Type.Optional(Type.Record(Type.String(), Type.String())),
    /** Largest request body buffered for judging, in bytes. */
    max_body_bytes: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
);
export type GatewaySection = Static<typeof GatewaySection>;

export const BudgetSection = Type.Object(
  {
    currencies: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    meter: Type.Optional(Type.Array(BudgetMeter)),
    limit: Type.Optional(Type.Array(BudgetLimit)),
  },
  { additionalProperties: false },
);

export const OrgConfig = Type.Object(
  {
    gateway: Type.Optional(GatewaySection),
    grant: Type.Optional(Type.Array(Grant)),
    budget: Type.Optional(BudgetSection),
  },
  { additionalProperties: false },
);
export type OrgConfig = Static<typeof OrgConfig>;

export const WorkerConfig = Type.Object(
  {
    name: Type.String({ pattern: "^[a-z0-9][a-z0-9_-]*$" }),
    grant: Type.Optional(Type.Array(Grant)),
    budget: Type.Optional(
      Type.Object(
        { limit: Type.Optional(Type.Array(BudgetLimit)) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type WorkerConfig = Static<typeof WorkerConfig>;
