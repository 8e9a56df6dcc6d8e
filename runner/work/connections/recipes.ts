import { chatPlatforms, type PlatformTerms } from "../../ground/chat/terms.ts";

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
  /** An API that answers 200 with `"ok": false` for a bad token: this field must be true in its JSON. */
  okField?: string;
}

/**
 * How a provider hands out access by consent (OAuth 2.0 authorization code
 * with PKCE, or the device flow): its endpoints, the scopes asked for unless
 * --scope says otherwise, and what the gateway injects from the tokens.
 */
export interface OAuthRecipe {
  authorizeUrl: string;
  tokenUrl: string;
  /** RFC 8628's device authorization endpoint, where the provider has one. */
  deviceUrl?: string;
  /** RFC 7009's revocation endpoint, where the provider has one. */
  revokeUrl?: string;
  /** Where a person takes roster's access away by hand when there is no revocation endpoint. */
  revokeByHand?: string;
  scopes: string[];
  /** Authorization parameters the provider needs beside the standard ones (to hand out a refresh token). */
  params?: Record<string, string>;
  /** How the client authenticates at the token endpoint: in the form (default) or HTTP Basic. */
  clientAuth?: "body" | "basic";
  /** The header the gateway adds, from the vault's `access` field; default `Bearer {access}`. */
  inject?: { header: string; value: string };
  /** Where a person registers roster as a client to get its id. */
  registerAt: string;
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
  /** Vault fields its listener needs besides the secret (a second token): named when missing. */
  listenerNeeds?: string[];
  /** `--oauth`: sign in by consent instead of pasting the secret. */
  oauth?: OAuthRecipe;
}

const TOKEN = "token";

/** Services a box reaches through the door. */
const SERVICES: readonly Recipe[] = [
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
    oauth: {
      authorizeUrl: "https://github.com/login/oauth/authorize",
      tokenUrl: "https://github.com/login/oauth/access_token",
      deviceUrl: "https://github.com/login/device/code",
      revokeByHand: "https://github.com/settings/applications",
      scopes: ["repo", "read:user"],
      inject: { header: "authorization", value: "Basic {b64:x-access-token:{access}}" },
      registerAt:
        "https://github.com/settings/developers (an OAuth app; enable the device flow for --device)",
    },
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
    name: "google",
    summary: "Google's APIs (Gmail, Drive, Calendar) by OAuth consent (--oauth)",
    kind: "service",
    hosts: ["www.googleapis.com", "gmail.googleapis.com"],
    methods: ["*"],
    inject: { header: "authorization", value: "Bearer {access}" },
    verify: { method: "GET", path: "/oauth2/v3/userinfo" },
    oauth: {
      authorizeUrl: "https://accounts.google.com/o/oauth2/v2/auth",
      tokenUrl: "https://oauth2.googleapis.com/token",
      deviceUrl: "https://oauth2.googleapis.com/device/code",
      revokeUrl: "https://oauth2.googleapis.com/revoke",
      scopes: ["openid", "email", "https://www.googleapis.com/auth/gmail.readonly"],
      // Google hands out a refresh token only for offline access, and again only on a fresh consent
      params: { access_type: "offline", prompt: "consent" },
      registerAt: "https://console.cloud.google.com/apis/credentials (a Desktop app client)",
    },
  },
  {
    name: "microsoft",
    summary: "Microsoft 365 through Microsoft Graph by OAuth consent (--oauth)",
    kind: "service",
    hosts: ["graph.microsoft.com"],
    methods: ["*"],
    inject: { header: "authorization", value: "Bearer {access}" },
    verify: { method: "GET", path: "/v1.0/me" },
    oauth: {
      authorizeUrl: "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
      tokenUrl: "https://login.microsoftonline.com/common/oauth2/v2.0/token",
      deviceUrl: "https://login.microsoftonline.com/common/oauth2/v2.0/devicecode",
      revokeByHand:
        "https://myapps.microsoft.com (or an admin, in Entra ID's enterprise applications)",
      scopes: ["offline_access", "User.Read", "Mail.Read"],
      registerAt:
        "https://entra.microsoft.com (App registrations; a public client for loopback or device sign-in)",
    },
  },
  {
    name: "linear",
    summary: "Linear's GraphQL API by OAuth consent (--oauth)",
    kind: "service",
    hosts: ["api.linear.app"],
    methods: ["*"],
    inject: { header: "authorization", value: "Bearer {access}" },
    oauth: {
      authorizeUrl: "https://linear.app/oauth/authorize",
      tokenUrl: "https://api.linear.app/oauth/token",
      revokeUrl: "https://api.linear.app/oauth/revoke",
      scopes: ["read"],
      registerAt: "https://linear.app/settings/api/applications",
    },
  },
  {
    name: "notion",
    summary: "Notion's API by OAuth consent (--oauth); pages are chosen on the consent screen",
    kind: "service",
    hosts: ["api.notion.com"],
    methods: ["*"],
    inject: { header: "authorization", value: "Bearer {access}" },
    verify: { method: "GET", path: "/v1/users/me", headers: { "notion-version": "2022-06-28" } },
    oauth: {
      authorizeUrl: "https://api.notion.com/v1/oauth/authorize",
      tokenUrl: "https://api.notion.com/v1/oauth/token",
      revokeByHand: "Notion's Settings → Connections",
      scopes: [],
      params: { owner: "user" },
      clientAuth: "basic",
      registerAt: "https://www.notion.so/profile/integrations (a public integration)",
    },
  },
  {
    name: "atlassian",
    summary: "Jira and Confluence Cloud through api.atlassian.com by OAuth consent (--oauth)",
    kind: "service",
    hosts: ["api.atlassian.com"],
    methods: ["*"],
    inject: { header: "authorization", value: "Bearer {access}" },
    verify: { method: "GET", path: "/oauth/token/accessible-resources" },
    oauth: {
      authorizeUrl: "https://auth.atlassian.com/authorize",
      tokenUrl: "https://auth.atlassian.com/oauth/token",
      revokeByHand: "https://id.atlassian.com/manage-profile/apps",
      scopes: ["read:jira-work", "read:jira-user", "offline_access"],
      params: { audience: "api.atlassian.com", prompt: "consent" },
      registerAt: "https://developer.atlassian.com/console/myapps/ (an OAuth 2.0 integration)",
    },
  },
];

/** What stays on the host: an action credential, a host folder or repo. */
const LOCAL: readonly Recipe[] = [
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

/**
 * Every recipe: the services, then each chat platform's bot (its declaration
 * gives the token, the hosts and the check: ground/chat/terms.ts), then what
 * stays on the host.
 */
export function recipes(): readonly Recipe[] {
  return [...SERVICES, ...chatPlatforms().flatMap(botRecipe), ...LOCAL];
}

/** A chat platform's bot as a service connection, bound to the worker by its `[channels]` key. */
function botRecipe(platform: PlatformTerms): Recipe[] {
  const bot = platform.connection;
  if (!bot) return [];
  return [
    {
      name: platform.name,
      summary: bot.summary,
      kind: "service",
      hosts: bot.hosts,
      methods: ["*"],
      inject: bot.inject,
      secretField: bot.secretField,
      verify: bot.verify,
      bindsChannel: platform.name,
      ...(bot.listenerNeeds ? { listenerNeeds: bot.listenerNeeds } : {}),
    },
  ];
}

export function findRecipe(name: string): Recipe | undefined {
  return recipes().find((recipe) => recipe.name === name);
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
