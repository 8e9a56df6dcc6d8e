import { type Static, Type } from "@sinclair/typebox";
import { ActionGrant, TrustRule } from "./action-schema.ts";
import { ChannelClass } from "./channel-class-schema.ts";
import { BotChannels, botChannels, ChatSection, chatSection } from "./chat-schema.ts";

export type { ChatSection } from "./chat-schema.ts";

import { BudgetLimit, BudgetMeter, Grant, ModelPrice, OrgGrant } from "./grant-schema.ts";
import { KnowledgeSection } from "./knowledge.ts";
import { McpServerDeclaration } from "./mcp-schema.ts";
import { AGE_PATTERN } from "./store-limits.ts";
import { ToolchainSection } from "./toolchain-schema.ts";
import { WORKER_NAME_PATTERN } from "./worker-name.ts";

/** org.toml: the deployment. Unknown keys are errors, so typos never pass silently. */
export const GatewaySection = Type.Object(
  {
    /** host:port pairs to listen on (for the host; boxes use the door); default loopback. */
    listen: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    /** Extra CA certificates (PEM files) trusted for upstream TLS, beside the system roots. */
    upstream_ca: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    /** Static name → address answers, checked before DNS (like curl --resolve). */
    resolve: Type.Optional(Type.Record(Type.String(), Type.String())),
    /** Largest request body buffered for judging, in bytes. */
    max_body_bytes: Type.Optional(Type.Integer({ minimum: 0 })),
    /**
     * What one run's requests may add to the audit log ("64m" by default);
     * past it the door refuses the run's requests (boundary/gateway/audit.ts).
     */
    audit_max_per_run: Type.Optional(
      Type.String({
        pattern: "^[0-9]+(\\.[0-9]+)?[kmgKMG]$",
        description: 'a size like "64m" or "1g"',
      }),
    ),
    /** How long the gateway waits on each side; defaults in GATEWAY_TIMEOUT_DEFAULTS. */
    timeouts: Type.Optional(
      Type.Object(
        {
          connect_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
          upstream_headers_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
          upstream_body_idle_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
          client_headers_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
          client_idle_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type GatewaySection = Static<typeof GatewaySection>;

export const BudgetSection = Type.Object(
  {
    /**
     * The share of any limit at which proactive tasks (the worker's own) wait
     * and owner tasks still run; 0.8 when unset.
     */
    soft_stop: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1 })),
    currencies: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    meter: Type.Optional(Type.Array(BudgetMeter)),
    limit: Type.Optional(Type.Array(BudgetLimit)),
    /** Model prices (USD per million tokens) for the `usd` currency; see gateway/prices.ts. */
    price: Type.Optional(Type.Array(ModelPrice)),
  },
  { additionalProperties: false },
);

/** The container engines roster drives: the one list, read by the config and by runner/boundary/box. */
export const EngineKind = Type.Union([Type.Literal("docker"), Type.Literal("podman")]);
export type EngineKind = Static<typeof EngineKind>;

export const EngineSection = Type.Object(
  {
    /**
     * Which container engine runs the boxes; when unset, what the socket is
     * (DOCKER_HOST, else Docker's socket, else Podman's).
     */
    kind: Type.Optional(EngineKind),
    /** The box image (a local tag by default). */
    image: Type.Optional(Type.String({ minLength: 1 })),
    /**
     * For development: a roster checkout whose extensions/ and engine/run-pi
     * are mounted read-only over the baked ones in every box (a warning says so
     * on every run). Checked to exist by config/engine-dir.ts.
     */
    dir: Type.Optional(Type.String({ pattern: "^/", description: "an absolute path" })),
  },
  { additionalProperties: false },
);

/** What a name (worker, credential, connection) may be made of, as an error says it. */
const NAME = "lower-case letters, digits, '_' or '-'";

/** A duration in whole seconds, minutes or hours, or "off". */
export const STALL_AFTER_PATTERN = "^(off|[1-9][0-9]{0,5}[smh])$";

/** The runtimes a box may run under (box/runtime.ts checks the engine has it). */
export const BoxRuntime = Type.Union([Type.Literal("runc"), Type.Literal("runsc")], {
  description: '"runc" or "runsc"',
});
export type BoxRuntime = Static<typeof BoxRuntime>;

export const BoxSection = Type.Object(
  {
    pids_limit: Type.Optional(Type.Integer({ minimum: 16 })),
    /** e.g. "4g", "512m" */
    memory: Type.Optional(
      Type.String({
        pattern: "^[0-9]+(\\.[0-9]+)?[kmgKMG]$",
        description: 'a size like "4g" or "512m"',
      }),
    ),
    cpus: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /**
     * The most a box may write to its stdout, and to its stderr, over its life
     * (each; "512m" by default). Past it the box is stopped, ended by "output":
     * the host reads every byte a box writes, and the run's logs keep them.
     */
    max_output: Type.Optional(
      Type.String({
        pattern: "^[0-9]+(\\.[0-9]+)?[kmgKMG]$",
        description: 'a size like "512m" or "1g"',
      }),
    ),
    /**
     * Once the host firewall rule for the boxes' network. A box has no network
     * now, so this does nothing; it is still read so older files load.
     */
    egress_lockdown: Type.Optional(Type.Boolean()),
    /** A warm chat session's whole life, however busy (minutes). */
    session_ceiling_min: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /** One turn of a warm session (minutes): a turn past it ends the session with an error. */
    turn_ceiling_min: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /** A chat platform's session ends after this many quiet seconds. */
    chat_idle_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /** A terminal (roster talk) session ends after this many quiet seconds. */
    talk_idle_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /**
     * A run or a session turn with no model output, tool start or end, or tool
     * output for this long is stopped as stalled: "90s", "5m", "1h", or "off"
     * (org.toml only: a worker may shorten it, never switch it off).
     */
    stall_after: Type.Optional(
      Type.String({
        pattern: STALL_AFTER_PATTERN,
        description: 'a duration like "90s", "5m" or "1h", or "off"',
      }),
    ),
    /**
     * The OCI runtime a box runs under: "runc" (the engine's default) or
     * "runsc" (gVisor, a user-space kernel between the box and the host's;
     * `roster box doctor --fix` registers it). A worker may require runsc, never drop it.
     */
    runtime: Type.Optional(BoxRuntime),
    /**
     * The longest fetch_pages lets one page's scripts run in the box's browser
     * before reading what it has (seconds; 15 by default).
     */
    render_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 300 })),
  },
  { additionalProperties: false },
);
export type BoxSection = Static<typeof BoxSection>;

export const ModelSection = Type.Object(
  {
    provider: Type.Union([
      Type.Literal("anthropic"),
      Type.Literal("openai"),
      Type.Literal("openai-compatible"),
    ]),
    /** The model id, as the provider names it. */
    model: Type.String({ minLength: 1 }),
    /** Required for openai-compatible: e.g. http://10.0.0.5:8000/v1 */
    base_url: Type.Optional(
      Type.String({ pattern: "^https?://", description: "an http:// or https:// URL" }),
    ),
    /** Vault credential injected for the model host; defaults to the provider name (none for openai-compatible). */
    credential: Type.Optional(Type.String({ pattern: "^[a-z0-9_-]+$", description: NAME })),
    context_window: Type.Optional(Type.Integer({ minimum: 1024 })),
    max_tokens: Type.Optional(Type.Integer({ minimum: 16 })),
  },
  { additionalProperties: false },
);
export type ModelSection = Static<typeof ModelSection>;

/**
 * A worker.toml [model]: every key optional, over the org's. The loader lets a
 * worker pick model, max_tokens and context_window only; provider, base_url and
 * credential must be absent or equal the org's, since they decide where the
 * injected model credential goes.
 */
export const WorkerModelSection = Type.Partial(ModelSection, { additionalProperties: false });
export type WorkerModelSection = Static<typeof WorkerModelSection>;

/**
 * A worker's store: how many snapshots each store keeps (store/snapshots.ts;
 * taken after every run that changed it and in the server's daily sweep, 0
 * turns them off), how large it (and each of its channel stores) may grow
 * while a box writes it, how large a run's $HOME and clones may grow, and the
 * share of the data filesystem kept free for everyone (org-only);
 * runs/disk-watch.ts enforces those. How long a finished run's $HOME and
 * clones stay (org-only) is runs/retention.ts's.
 */
export const StoreSection = Type.Object(
  {
    snapshots: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1000,
        description: "a whole number of snapshots to keep, 0 (off) to 1000",
      }),
    ),
    max_size: Type.Optional(
      Type.String({
        pattern: "^[0-9]+(\\.[0-9]+)?[kmgKMG]$",
        description: 'a size like "10g" or "512m"',
      }),
    ),
    reserve: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        maximum: 0.5,
        description: "the share of the data filesystem kept free, like 0.05",
      }),
    ),
    home_max_size: Type.Optional(
      Type.String({
        pattern: "^[0-9]+(\\.[0-9]+)?[kmgKMG]$",
        description: 'a size like "10g" or "512m"',
      }),
    ),
    scratch_keep: Type.Optional(
      Type.String({
        pattern: AGE_PATTERN,
        description: 'an age like "3d", "12h" or "90m"',
      }),
    ),
  },
  { additionalProperties: false },
);
export type StoreSection = Static<typeof StoreSection>;

export const ContextSection = Type.Object(
  {
    identity_max_chars: Type.Optional(Type.Integer({ minimum: 0 })),
    task_max_chars: Type.Optional(Type.Integer({ minimum: 0 })),
    max_injected_chars: Type.Optional(Type.Integer({ minimum: 0 })),
    /** Channel messages a session's first turn carries (newest kept). */
    history_max_messages: Type.Optional(Type.Integer({ minimum: 0 })),
    /** Characters of channel history a session's first turn carries (newest kept). */
    history_max_chars: Type.Optional(Type.Integer({ minimum: 0 })),
    /** Characters of a channel's purpose.md a prompt carries; a longer one is cut with a marker. */
    purpose_max_chars: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
);
export type ContextSection = Static<typeof ContextSection>;

/**
 * How much of the worker's own memory file (~/store/memory/memory.jsonl) a
 * prompt carries: at most `max_notes` notes and `max_chars` characters of
 * them (0 for either: no notes shown). A worker may only lower them.
 */
export const MemorySection = Type.Object(
  {
    max_notes: Type.Optional(Type.Integer({ minimum: 0 })),
    max_chars: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
);
export type MemorySection = Static<typeof MemorySection>;

/** A credential exposed to boxes as an env variable holding a sentinel (the gateway injects the real value). */
export const Expose = Type.Object(
  {
    credential: Type.String({ pattern: "^[a-z0-9_-]+$", description: NAME }),
    env: Type.String({
      pattern: "^[A-Z][A-Z0-9_]*$",
      description: "an environment variable name in UPPER_SNAKE case",
    }),
  },
  { additionalProperties: false },
);
export type Expose = Static<typeof Expose>;

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

export const OrgConfig = Type.Object(
  {
    engine: Type.Optional(EngineSection),
    box: Type.Optional(BoxSection),
    model: Type.Optional(ModelSection),
    context: Type.Optional(ContextSection),
    store: Type.Optional(StoreSection),
    memory: Type.Optional(MemorySection),
    gateway: Type.Optional(GatewaySection),
    grant: Type.Optional(Type.Array(OrgGrant)),
    action: Type.Optional(Type.Array(ActionGrant)),
    trust: Type.Optional(Type.Array(TrustRule)),
    expose: Type.Optional(Type.Array(Expose)),
    budget: Type.Optional(BudgetSection),
    heartbeat: Type.Optional(Type.Array(HeartbeatRule)),
    schedule: Type.Optional(ScheduleSection),
    chat: Type.Optional(ChatSection),
    knowledge: Type.Optional(KnowledgeSection),
    toolchain: Type.Optional(ToolchainSection),
    console: Type.Optional(ConsoleSection),
    server: Type.Optional(ServerSection),
    telemetry: Type.Optional(TelemetrySection),
  },
  { additionalProperties: false },
);
export type OrgConfig = Static<typeof OrgConfig>;

export const WorkerConfig = Type.Object(
  {
    name: Type.String({ pattern: WORKER_NAME_PATTERN, description: NAME }),
    model: Type.Optional(WorkerModelSection),
    context: Type.Optional(ContextSection),
    memory: Type.Optional(MemorySection),
    box: Type.Optional(BoxSection),
    /** Only the sizes, and only lower than the org's (the reserve, snapshots and retention are the host's). */
    store: Type.Optional(Type.Omit(StoreSection, ["reserve", "snapshots", "scratch_keep"])),
    grant: Type.Optional(Type.Array(Grant)),
    /** Refused by the loader (only org.toml grants actions); typed so the error can say so. */
    action: Type.Optional(Type.Array(Type.Omit(ActionGrant, ["workers"]))),
    /** Only level = "gate" (narrowing). */
    trust: Type.Optional(Type.Array(Type.Omit(TrustRule, ["workers"]))),
    expose: Type.Optional(Type.Array(Expose)),
    /**
     * Chat bots bound to this worker: the vault credential of each platform's
     * bot, keyed by the platform (chat-schema.ts). One bot serves one worker.
     */
    channels: Type.Optional(BotChannels),
    /**
     * The channels whose messages wake this worker (channel-class-schema.ts);
     * a message from any other is kept in its channel's history as context.
     * Every channel its bots are in when absent.
     */
    wake: Type.Optional(ChannelClass),
    /** How often the heartbeat fires ("30m", "6h", "1d"), or "off"; see config/heartbeat.ts. */
    heartbeat: Type.Optional(
      Type.String({
        pattern: "^(off|[1-9][0-9]{0,5}(m|h|d))$",
        description: 'an interval like "30m", "6h" or "1d", or "off"',
      }),
    ),
    toolchain: Type.Optional(ToolchainSection),
    /** MCP servers the box starts itself and speaks to over stdio (mcp-schema.ts). */
    mcp: Type.Optional(Type.Array(McpServerDeclaration)),
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

/** org.toml as it is checked: `[chat]` with the keys of the chat platforms declared now (chat-schema.ts). */
export function orgSchema() {
  return Type.Object(
    { ...OrgConfig.properties, chat: Type.Optional(chatSection()) },
    { additionalProperties: false },
  );
}

/** worker.toml as it is checked: `[channels]` with a key for each platform a bot speaks for. */
export function workerSchema() {
  return Type.Object(
    { ...WorkerConfig.properties, channels: Type.Optional(botChannels()) },
    { additionalProperties: false },
  );
}
