import { FormatRegistry, type Static, Type } from "@sinclair/typebox";
import { chatPlatforms, type PlatformTerms, surfaceKinds } from "../chat/terms.ts";

/**
 * What the config says of chat, with no platform named: each platform's
 * keys and id rules come from its own declaration (ground/chat/terms.ts),
 * read when a file is checked. A string a platform's rule judges carries a
 * format of its own (a person, a room, a server, an executor), checked
 * against the platforms declared then; `[chat.from_platform]` and worker.toml
 * `[channels]` are built from them (orgSchema, workerSchema in
 * config-schema.ts). A key or id of a platform nobody declared is refused.
 */
const NAME = "lower-case letters, digits, '_' or '-'";

/** The executors that are not a chat platform's: the action host's own (services/actions/executors). */
export const HOST_EXECUTORS = [
  "message-user",
  "email",
  "self",
  "identity",
  "purpose",
  "task",
  "task-list",
  "repo",
  "access",
] as const;

const names = (pick: (platform: PlatformTerms) => boolean) =>
  chatPlatforms()
    .filter(pick)
    .map((platform) => platform.name);

/** Each format: whose names it admits, and the pattern around them (a string judged by the platforms declared now). */
const RULES: Record<string, { whose: (platform: PlatformTerms) => boolean; rest: string }> = {
  "chat-person": { whose: (p) => p.people === true, rest: ":[A-Za-z0-9]{1,40}$" },
  "chat-room": { whose: (p) => p.people === true, rest: "-[a-z0-9._-]+$" },
  "chat-server": { whose: (p) => p.serverOf !== undefined, rest: "-[a-z0-9]{1,40}$" },
};
const patternOf = (rule: { whose: (platform: PlatformTerms) => boolean; rest: string }) =>
  `^(${names(rule.whose).join("|")})${rule.rest}`;

/** The executors config may name now: the host's own, then each platform's. */
export function executorNames(): string[] {
  return [...HOST_EXECUTORS, ...names(() => true)];
}

for (const [format, rule] of Object.entries(RULES))
  FormatRegistry.Set(
    format,
    // no platform declared: nothing matches
    (value) => names(rule.whose).length > 0 && new RegExp(patternOf(rule)).test(value),
  );
FormatRegistry.Set("executor", (value) => executorNames().includes(value));
FormatRegistry.Set("chat-surface", (value) => surfaceKinds().includes(value));
/**
 * What a channel class's `surfaces` may hold (channel-class-schema.ts): a
 * surface kind, a room class (`public`, `private`: as the platform's
 * permissions say), or one channel: a platform's roster channel id, or the
 * platform's own id for it (digits, as Discord's are).
 */
const ROOM_CLASS_WORDS = ["public", "private"];
FormatRegistry.Set(
  "chat-surface-class",
  (value) =>
    surfaceKinds().includes(value) ||
    ROOM_CLASS_WORDS.includes(value) ||
    /^[0-9]{1,32}$/.test(value) ||
    (/^[a-z0-9][a-z0-9._-]{0,127}$/.test(value) &&
      chatPlatforms().some((platform) => value.startsWith(platform.channelPrefix))),
);

/** A refusal's words for a value a format turned down (toml-file.ts), as a pattern's or a union's would read. */
export function formatSaid(format: string): string | undefined {
  if (format === "executor") return `must be one of ${executorNames().join(", ")}`;
  if (format === "chat-surface") return `must be one of ${surfaceKinds().join(", ")}`;
  if (format === "chat-surface-class")
    return `must be one of ${[...surfaceKinds(), ...ROOM_CLASS_WORDS].join(", ")}, or one channel's id (${chatPlatforms()
      .map((platform) => `${platform.channelPrefix}…`)
      .join(", ")}, or the platform's own digits)`;
  const rule = RULES[format];
  return rule ? `must match ${patternOf(rule)}` : undefined;
}

const person = Type.String({ format: "chat-person" });
/** A channel class's server: `<platform>-<server id>` (channel-class-schema.ts). */
export const ServerName = Type.String({ format: "chat-server" });
/** An `[[action]]`'s executor: the action host's own or a platform's. */
export const ExecutorField = Type.String({ format: "executor" });

/**
 * Chat as the admin surface: who may press approve/deny on a gate offered in
 * a trusted channel and run the reading commands (`approvers`:
 * `<platform>:<user id>`), who may run every command (`admins`, and whom
 * `from_platform` vouches for: each platform its own keys), how long an
 * offer stands (the gate stays pending for the desk after), and the trusted
 * channel where gates from elsewhere are offered.
 */
export const ChatSection = Type.Object(
  {
    approvers: Type.Optional(Type.Array(person)),
    /** May run every chat command (`change` ones too): trust a channel, file a task, pause a worker. */
    admins: Type.Optional(Type.Array(person)),
    /**
     * Whom a platform's own standing makes an admin, each only when set here,
     * and only in the guilds and workspaces named here: a bot can be invited
     * anywhere, and a stranger's own server would vouch for anyone. Read by
     * each platform (its keys start with its name).
     */
    from_platform: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    offer_ttl_mins: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    approvals_channel: Type.Optional(Type.String({ format: "chat-room" })),
  },
  { additionalProperties: false },
);
export type ChatSection = Static<typeof ChatSection>;

/** `[chat]` as it is checked: `from_platform` holds each declared platform's keys and no other. */
export function chatSection() {
  const keys = chatPlatforms().flatMap((platform) => Object.entries(platform.fromPlatform ?? {}));
  return Type.Object(
    {
      ...ChatSection.properties,
      from_platform: Type.Optional(
        Type.Object(Object.fromEntries(keys), { additionalProperties: false }),
      ),
    },
    { additionalProperties: false },
  );
}

/** worker.toml `[channels]`: the vault credential of each platform's bot bound to this worker. */
export const BotChannels = Type.Record(Type.String(), Type.String());

/** `[channels]` as it is checked: a key for each declared platform a bot speaks for, and no other. */
export function botChannels() {
  const bound = names((platform) => platform.bot === true);
  return Type.Object(
    Object.fromEntries(
      bound.map((name) => [
        name,
        Type.Optional(Type.String({ pattern: "^[a-z0-9_-]+$", description: NAME })),
      ]),
    ),
    { additionalProperties: false },
  );
}

/** The platforms a bot can be bound on: the keys of `[channels]`. */
export function botPlatforms(): string[] {
  return names((platform) => platform.bot === true);
}
