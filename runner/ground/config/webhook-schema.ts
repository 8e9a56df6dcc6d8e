import { type Static, Type } from "@sinclair/typebox";
import { NAME, WORKER_NAME_PATTERN } from "./worker-name.ts";

/**
 * Signed webhooks (docs/tasks.md#webhooks): org.toml's `[[webhook]]`, one per
 * sender, and `[webhooks]`, where `roster server start` listens for them. Off
 * unless a `[[webhook]]` is configured. Each verified delivery is filed as a
 * relayed task for the hook's worker (work/tasks/relay.ts). Org-only: a
 * worker can't open a door into itself. config-schema.ts puts them into
 * org.toml's schema; config/webhooks.ts checks what a schema can't.
 */

/** Where the webhook listener binds unless `[webhooks] listen` says otherwise: loopback. */
export const DEFAULT_WEBHOOK_LISTEN = "127.0.0.1:7719";

export const WebhookScheme = Type.Union([Type.Literal("github"), Type.Literal("hmac-sha256")]);
export type WebhookScheme = Static<typeof WebhookScheme>;

export const WebhookRule = Type.Object(
  {
    /** The path it answers at: POST /hooks/<name>. */
    name: Type.String({ pattern: "^[a-z0-9][a-z0-9_-]{0,63}$", description: NAME }),
    /** The worker each delivery is relayed to. */
    worker: Type.String({ pattern: WORKER_NAME_PATTERN, description: NAME }),
    /** "github": X-Hub-Signature-256; "hmac-sha256": X-Roster-Signature over timestamp, id and body. */
    scheme: WebhookScheme,
    /**
     * The vault credential (`roster login NAME`) whose `key` is the shared
     * secret; a name, never the secret: org.toml is read by people who must
     * not be able to sign.
     */
    secret: Type.String({ pattern: "^[a-z0-9_-]+$", description: NAME }),
    /** github only: the X-GitHub-Event values filed; others are answered and ignored. Every event when unset. */
    events: Type.Optional(
      Type.Array(
        Type.String({
          pattern: "^([a-z_]+|\\*)$",
          description: 'an event name like "issues", or "*"',
        }),
        {
          minItems: 1,
        },
      ),
    ),
    /** The relayed task's ceiling in minutes (15 when unset). */
    ceiling: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /** Deliveries filed per minute (and at most this many at once): 30 when unset. */
    per_minute: Type.Optional(Type.Integer({ minimum: 1, maximum: 6000 })),
  },
  { additionalProperties: false },
);
export type WebhookRule = Static<typeof WebhookRule>;

export const WebhooksSection = Type.Object(
  {
    /** HOST:PORT the listener binds; loopback unless set (put a TLS proxy in front for the internet). */
    listen: Type.Optional(
      Type.String({
        pattern: "^(\\[[0-9a-fA-F:]+\\]|[^:\\s]+):\\d{1,5}$",
        description: 'HOST:PORT, like "127.0.0.1:7719"',
      }),
    ),
  },
  { additionalProperties: false },
);
export type WebhooksSection = Static<typeof WebhooksSection>;
