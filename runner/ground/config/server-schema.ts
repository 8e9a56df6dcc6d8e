import { type Static, Type } from "@sinclair/typebox";
import { NAME } from "./worker-name.ts";

/**
 * What org.toml says to `roster server`: `[[heartbeat]]` and `[schedule]`
 * (what it files on its own), `[console]` (the web console's address),
 * `[server]` (ready boxes and the run socket) and `[telemetry]` (traces and
 * /metrics). config-schema.ts puts them into org.toml's schema.
 */

/**
 * A heartbeat: the server files this task for each listed worker ("*": every
 * worker) every `every` (e.g. "30m", "2h", "1d"), unless one is still open.
 * A worker.toml's own `heartbeat` ("30m" or "off") wins over it.
 */
export const HeartbeatRule = Type.Object(
  {
    workers: Type.Array(
      Type.String({ pattern: "^(\\*|[a-z0-9][a-z0-9_-]*)$", description: `${NAME}, or "*"` }),
      { minItems: 1 },
    ),
    every: Type.String({
      pattern: "^[1-9][0-9]*(m|h|d)$",
      description: 'an interval like "30m", "6h" or "1d"',
    }),
    prompt: Type.Optional(Type.String({ minLength: 1, maxLength: 4000 })),
    ceiling_min: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
  },
  { additionalProperties: false },
);

export type HeartbeatRule = Static<typeof HeartbeatRule>;

/** Recurring tasks: the zone their cron expressions and windows are read in (host-local by default). */
export const ScheduleSection = Type.Object(
  {
    timezone: Type.Optional(
      Type.String({ minLength: 1, description: 'an IANA zone, e.g. "Europe/Berlin"' }),
    ),
  },
  { additionalProperties: false },
);

/**
 * `roster server start`'s web console. Loopback unless `listen` says otherwise;
 * `enabled = false` turns it off. Org-only: no worker can move or open it.
 */
export const ConsoleSection = Type.Object(
  {
    listen: Type.Optional(
      Type.String({
        pattern: "^(\\[[0-9a-fA-F:]+\\]|[^:\\s]+):\\d{1,5}$",
        description: 'HOST:PORT, like "127.0.0.1:7717"',
      }),
    ),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export type ConsoleSection = Static<typeof ConsoleSection>;

/**
 * `roster server`'s ready boxes (docs/ready-boxes.md): boxes started before
 * their run, per worker that ran lately. Org-only. 0 (the default) keeps none.
 */
export const ServerSection = Type.Object(
  {
    ready_boxes: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 8, description: "ready boxes per worker, 0 to 8" }),
    ),
    ready_idle_secs: Type.Optional(
      Type.Integer({
        minimum: 10,
        maximum: 86_400,
        description: "seconds a ready box waits untaken, 10 to 86400",
      }),
    ),
  },
  { additionalProperties: false },
);

export type ServerSection = Static<typeof ServerSection>;

/**
 * What an operator's monitoring stack reads (docs/telemetry.md). Org-only.
 * `otlp_endpoint`: where traces go (off unless set).
 * `metrics_listen`: where `roster server start` serves Prometheus's
 * /metrics (off unless set); its own listener, not the console's port, so a
 * scraper needs no browser login and the console may face people while the
 * metrics stay on an internal address. No box reaches it (closed-ports.ts).
 */
export const TelemetrySection = Type.Object(
  {
    metrics_listen: Type.Optional(
      Type.String({
        pattern: "^(\\[[0-9a-fA-F:]+\\]|[^:\\s]+):\\d{1,5}$",
        description: 'HOST:PORT, like "127.0.0.1:9464"',
      }),
    ),
    /**
     * The vault credential (`roster login NAME`) whose `key` a scraper must
     * send as `Authorization: Bearer …`; none asked unless set. A name, never
     * the secret: org.toml is read by people who must not scrape.
     */
    metrics_credential: Type.Optional(Type.String({ pattern: "^[a-z0-9_-]+$", description: NAME })),
    /**
     * Where traces go, over OTLP/HTTP (`/v1/traces` is added): a collector's
     * base URL. Nothing is exported unless set.
     */
    otlp_endpoint: Type.Optional(
      Type.String({
        pattern: "^https?://[^\\s/?#]+(/[^\\s?#]*)?$",
        description: 'an http(s) URL, like "http://127.0.0.1:4318"',
      }),
    ),
  },
  { additionalProperties: false },
);

export type TelemetrySection = Static<typeof TelemetrySection>;

/** Ready boxes kept per worker, and how long one waits, when org.toml says nothing. */
export const READY_DEFAULTS = { ready_boxes: 0, ready_idle_secs: 300 } as const;
