/**
 * The built-in connection recipes (`roster connection catalog`): for each, the
 * kind of connections/<name>.toml it writes, what that grants (hosts,
 * methods, or a mount), what the gateway injects (a header template, never a
 * secret), which vault field holds the secret, and the one harmless request
 * `--verify` makes. Pure data: the file writer and the verifier read it.
 */
export type RecipeKind = "service" | "mcp" | "host-dir" | "host-repo" | "action-credential";

export interface VerifyCall {
  method: "GET" | "POST";
  /** Path and query on the connection's first host. */
  path: string;
  /** Non-secret headers the API needs beside the injected one (an API version). */
  headers?: Record<string, string>;
  /** Slack answers 200 with `"ok": false` for a bad token: this field must be true in its JSON. */
  okField?: string;
}

export interface Recipe {
  name: string;
  summary: string;
  kind: RecipeKind;
  /** Service recipes: the hosts it grants when --host names none; empty: --host is required. */
  hosts?: string[];
  methods?: string[];
  inject?: { header: string; value: string };
  /** The vault field the secret is stored as ({key} for model providers, so `roster login` agrees). */
  secretField?: string;
  verify?: VerifyCall;
  /** One line a person reads in the written file, and in the catalog. */
  note?: string;
  /** A chat bot's token: the `[channels]` key its one worker is bound by, so the bot listens for it. */
  bindsChannel?: string;
  /** Vault fields its listener needs besides the secret (Slack's Socket Mode app token): named when missing. */
  listenerNeeds?: string[];
}

const TOKEN = "token";

export const RECIPES: readonly Recipe[] = [
  {
    name: "github",
    summary: "GitHub: the REST API and git over HTTPS, with a personal access token",
    kind: "service",
    hosts: ["api.github.com", "github.com", "uploads.github.com"],
    methods: ["*"],
    // Basic with x-access-token is the one form both the API and git over HTTPS accept
    inject: { header: "authorization", value: "Basic {b64:x-access-token:{token}}" },
    secretField: TOKEN,
    verify: { method: "GET", path: "/user" },
  },
  {
    name: "gitlab",
    summary: "GitLab's REST API (gitlab.com, or --host for your own instance)",
    kind: "service",
    hosts: ["gitlab.com"],
    methods: ["*"],
    inject: { header: "authorization", value: "Bearer {token}" },
    secretField: TOKEN,
    verify: { method: "GET", path: "/api/v4/user" },
  },
  {
    name: "openai",
    summary: "OpenAI's API with an API key (the same vault field `roster login openai` writes)",
    kind: "service",
    hosts: ["api.openai.com"],
    methods: ["*"],
    inject: { header: "authorization", value: "Bearer {key}" },
    secretField: "key",
    verify: { method: "GET", path: "/v1/models" },
  },
  {
    name: "anthropic",
    summary:
      "Anthropic's API with an API key (the same vault field `roster login anthropic` writes)",
    kind: "service",
    hosts: ["api.anthropic.com"],
    methods: ["*"],
    inject: { header: "x-api-key", value: "{key}" },
    secretField: "key",
    verify: { method: "GET", path: "/v1/models", headers: { "anthropic-version": "2023-06-01" } },
  },
  {
    name: "bearer",
    summary: "any HTTPS API that takes a bearer token (--host required; --verify-path to check)",
    kind: "service",
    hosts: [],
    methods: ["*"],
    inject: { header: "authorization", value: "Bearer {token}" },
    secretField: TOKEN,
    verify: { method: "GET", path: "/" },
  },
  {
    name: "mcp",
    summary:
      "an MCP server over HTTPS (streamable HTTP, or SSE) that takes a bearer token (--url required)",
    kind: "mcp",
    inject: { header: "authorization", value: "Bearer {token}" },
    secretField: TOKEN,
    note: "its tools reach granted workers as <name>__<tool>; org.toml grants for its host (match = { host, mcp = { tool } }) come first: they deny or gate some tools, the connection allows the rest",
  },
  {
    name: "slack",
    summary:
      "Slack's Web API with a bot token (xoxb-…); the same credential the slack executor uses",
    kind: "service",
    hosts: ["slack.com"],
    methods: ["*"],
    inject: { header: "authorization", value: "Bearer {bot_token}" },
    // the field the slack executor and listener read (services/chat/slack/client.ts)
    secretField: "bot_token",
    verify: { method: "POST", path: "/api/auth.test", okField: "ok" },
    bindsChannel: "slack",
    // Socket Mode connects with the app-level token (xapp-…), a second secret
    listenerNeeds: ["app_token"],
  },
  {
    name: "discord",
    summary: "Discord's API with a bot token; the same credential the discord executor uses",
    kind: "service",
    hosts: ["discord.com"],
    methods: ["*"],
    inject: { header: "authorization", value: "Bot {token}" },
    secretField: TOKEN,
    verify: { method: "GET", path: "/api/v10/users/@me" },
    bindsChannel: "discord",
  },
  {
    name: "smtp",
    summary:
      "an SMTP account for the email action (host --host, --field port/user/from; the password is the secret)",
    kind: "action-credential",
    secretField: "pass",
    note: 'no box reaches it: the host sends mail for an [[action]] with executor = "email", which reads the vault credential "smtp"',
  },
  {
    name: "host-dir",
    summary: "a folder on the host, mounted at ~/mnt/<name> (--path, --rw for read-write)",
    kind: "host-dir",
  },
  {
    name: "host-repo",
    summary: "a git repository on the host, mounted read-only at ~/mnt/<name> (--path)",
    kind: "host-repo",
    note: 'a bare repo with write = "gated" lets runs propose pushes (see the README)',
  },
];

export function findRecipe(name: string): Recipe | undefined {
  return RECIPES.find((recipe) => recipe.name === name);
}

/** What a recipe grants, in words: hosts and methods, or a mount. */
export function grantsOf(recipe: Recipe): string {
  if (recipe.kind === "host-dir") return "a host folder at ~/mnt/<name> (read-only unless --rw)";
  if (recipe.kind === "host-repo") return "a host git repo at ~/mnt/<name> (read-only)";
  if (recipe.kind === "action-credential") return "nothing in the box: the host's email action";
  if (recipe.kind === "mcp")
    return "HTTPS to the --url's host and port (GET, POST, DELETE); its tools as <name>__<tool>";
  const hosts = recipe.hosts?.length ? recipe.hosts.join(", ") : "--host";
  return `HTTPS to ${hosts}, methods ${(recipe.methods ?? ["*"]).join(", ")}`;
}

/** What the gateway adds to each request, as the template (the secret stays in the vault). */
export function injectsOf(recipe: Recipe): string {
  if (recipe.inject) return `${recipe.inject.header}: ${recipe.inject.value}`;
  if (recipe.kind === "action-credential")
    return `nothing (vault fields host, port, user, pass, from)`;
  return "nothing (no secret)";
}
