import { type Static, Type } from "@sinclair/typebox";
import { ActionGrant, TrustRule } from "./action-schema.ts";
import { AgentKind } from "./agent-schema.ts";
import { ChannelClass } from "./channel-class-schema.ts";
import { BotChannels, botChannels, ChatSection, chatSection } from "./chat-schema.ts";

export type { ChatSection } from "./chat-schema.ts";

import { BoxSection, ContextSection, MemorySection, StoreSection } from "./box-schema.ts";
import { BudgetLimit, BudgetMeter, Grant, ModelPrice, OrgGrant } from "./grant-schema.ts";
import { KnowledgeSection } from "./knowledge.ts";
import { McpServerDeclaration } from "./mcp-schema.ts";
import { PolicyTest } from "./policy-test-schema.ts";
import { RetentionSection } from "./retention.ts";
import {
  ConsoleSection,
  HeartbeatRule,
  ScheduleSection,
  ServerSection,
  TelemetrySection,
} from "./server-schema.ts";
import { ToolchainSection } from "./toolchain-schema.ts";
import { WebhookRule, WebhooksSection } from "./webhook-schema.ts";
import { NAME, WORKER_NAME_PATTERN } from "./worker-name.ts";

/** org.toml: the deployment. Unknown keys are errors, so typos never pass silently. */
export const GatewaySection = Type.Object(
  {
    /** host:port pairs to listen on (for the host; boxes use the door); default loopback. */
    listen: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    /** Extra CA certificates (PEM files) trusted for upstream TLS, beside the system roots. */
    upstream_ca: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    /**
     * A parent proxy every upstream connection goes through (HTTP CONNECT), as
     * on a network whose only way out is a company proxy; `https://` for one
     * spoken to over TLS (its CA may be in upstream_ca). No user:pass here:
     * that is upstream_proxy_auth, from the vault.
     */
    upstream_proxy: Type.Optional(
      Type.String({
        pattern: "^https?://[^/@\\s:]+(:[0-9]{1,5})?/?$",
        description:
          'a proxy URL like "http://proxy.corp:3128" (scheme, host and port only; its credential goes in upstream_proxy_auth)',
      }),
    ),
    /** The vault credential (fields user, pass) sent to the parent proxy as Proxy-Authorization: Basic. */
    upstream_proxy_auth: Type.Optional(
      Type.String({ pattern: "^[a-z0-9_-]+$", description: "a vault credential's name" }),
    ),
    /** Host patterns (as in grants: "*.corp.example", "10.1.2.3") reached directly, not through the proxy. */
    upstream_no_proxy: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    /** Static name → address answers, checked before DNS (like curl --resolve). */
    resolve: Type.Optional(Type.Record(Type.String(), Type.String())),
    /**
     * Processes serving the runs' doors beside the gateway's own
     * (boundary/gateway/process/shards.ts): "auto" (the default) is one per core
     * but one, at most 8, on a host of 4 cores or more, else none; 0 serves
     * every door in the gateway's process. Read at the gateway's start.
     */
    shards: Type.Optional(
      Type.Union([Type.Literal("auto"), Type.Integer({ minimum: 0, maximum: 64 })]),
    ),
    /** Largest request body buffered for judging, in bytes. */
    max_body_bytes: Type.Optional(Type.Integer({ minimum: 0 })),
    /**
     * What one run's requests may add to the audit log ("64m" by default);
     * past it the door refuses the run's requests (boundary/gateway/audit/audit.ts).
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
    /** Values the meters' CEL reads as `vars.<key>` (numbers, strings, booleans, lists, tables). */
    vars: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    meter: Type.Optional(Type.Array(BudgetMeter)),
    limit: Type.Optional(Type.Array(BudgetLimit)),
    /** Model prices (USD per million tokens) for the `usd` currency; see gateway/spend/prices.ts. */
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
    /** Every worker's agent unless its worker.toml names another (agent.ts); pi when unset. */
    agent: Type.Optional(AgentKind),
  },
  { additionalProperties: false },
);

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
    /** Policy tests: requests and what the door must do with them (policy-test-schema.ts). */
    test: Type.Optional(Type.Array(PolicyTest)),
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
    /** Signed webhooks, each delivery a relayed task (webhook-schema.ts); off unless one is set. */
    webhook: Type.Optional(Type.Array(WebhookRule)),
    webhooks: Type.Optional(WebhooksSection),
    /** How much of each log that grows with the deployment is kept (retention.ts). */
    retention: Type.Optional(RetentionSection),
  },
  { additionalProperties: false },
);
export type OrgConfig = Static<typeof OrgConfig>;

export const WorkerConfig = Type.Object(
  {
    name: Type.String({ pattern: WORKER_NAME_PATTERN, description: NAME }),
    /** The agent its box runs (agent.ts): org.toml's `[engine] agent` when unset. */
    agent: Type.Optional(AgentKind),
    model: Type.Optional(WorkerModelSection),
    context: Type.Optional(ContextSection),
    memory: Type.Optional(MemorySection),
    box: Type.Optional(BoxSection),
    /** Its gated repos: switched off, or under lower limits, never more than the org's (knowledge-limits.ts). */
    knowledge: Type.Optional(KnowledgeSection),
    /** Only the sizes, and only lower than the org's (the reserve, snapshots and retention are the host's). */
    store: Type.Optional(Type.Omit(StoreSection, ["reserve", "snapshots", "scratch_keep"])),
    grant: Type.Optional(Type.Array(Grant)),
    test: Type.Optional(Type.Array(PolicyTest)),
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
