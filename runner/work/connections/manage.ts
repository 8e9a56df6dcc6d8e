import { existsSync, readdirSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import { hostPatternProblem } from "../../ground/config/host-pattern.ts";
import { KNOWLEDGE_REPO } from "../../ground/config/knowledge.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { applyConfigChange } from "../../ground/config/trial.ts";
import { RosterError } from "../../ground/errors.ts";
import type { CredentialOrigin } from "../../ground/vault/credential-meta.ts";
import { metaFile } from "../../ground/vault/credential-meta.ts";
import { storeCredential } from "../runs/credentials.ts";
import { botBinding } from "./bot-binding.ts";
import type { ConnectionShape } from "./connection-file.ts";
import { addEdge, edgesOf, removeEdge, renderConnection } from "./connection-file.ts";
import { forgetState, readState, stateFile, updateState } from "./connection-state.ts";
import type { SignedIn } from "./oauth/sign-in.ts";
import { findRecipe, type Recipe, recipes } from "./recipes.ts";
import { storedFields } from "./stored-fields.ts";

/**
 * What the `roster connection` commands do to config/connections/, the vault
 * and state/connections/: each change to config goes through
 * applyConfigChange (tried on a copy with the real loader first), and a secret
 * is stored only once its file is in place.
 */
const NAME = /^[a-z0-9][a-z0-9_-]*$/;
/** A vault field beside the secret (`--field NAME=VALUE`). */
export const FIELD = /^[a-z][a-z0-9_]*$/;

export function connectionFile(paths: RosterPaths, name: string): string {
  return join(paths.config, "connections", `${name}.toml`);
}

export function checkName(name: string, what = "connection"): void {
  if (!NAME.test(name))
    throw new RosterError(
      `"${name}" is not a ${what} name: lower-case letters, digits, '_' or '-', starting with a letter or digit`,
      { exitCode: 2 },
    );
}

export interface AddOptions {
  name: string;
  from: string;
  hosts: string[];
  /** mcp: the server's https:// endpoint. */
  url?: string;
  path?: string;
  readWrite?: boolean;
  edges: string[];
  verifyPath?: string;
  /** Non-secret vault fields beside the secret (smtp's port, user, from). */
  fields: Record<string, string>;
  /** Asked for only after every check passed, so a refused add asks nothing. */
  secret: () => Promise<string>;
  /** `--oauth`: consent instead of the secret, likewise only after every check passed. */
  signIn?: (recipe: Recipe) => Promise<SignedIn>;
  shape?: ConnectionShape;
  /** `--use`: a bot's uses; without "capability" no box is granted, without "channel" no worker bound. */
  uses?: { capability: boolean; channel: boolean };
  /** Who stores the secret, and its `--expires`: kept as its age. */
  origin?: Omit<CredentialOrigin, "command">;
}

export interface Added {
  recipe: Recipe;
  file: string | undefined;
  stored: string | undefined;
  /** A chat bot's: what became of its worker's `[channels]` binding. */
  bound?: string;
}

/** A new connection: its file (tried with the real loader first), then its secret in the vault, then its state. */
export async function addConnection(paths: RosterPaths, options: AddOptions): Promise<Added> {
  const { name } = options;
  const { recipe, file } = checkAdd(paths, options);

  if (recipe.kind === "action-credential") return addActionCredential(paths, recipe, options);

  const hosts = options.hosts.length ? options.hosts : (recipe.hosts ?? []);
  checkReach(recipe, options, hosts);
  const path = options.path && !isAbsolute(options.path) ? resolve(options.path) : options.path;
  // consent (or the secret) before anything is written, so a refusal leaves nothing behind
  const signed = options.signIn ? await options.signIn(recipe) : undefined;
  const text = renderConnection({
    name,
    recipe: signed ? { ...recipe, inject: signed.endpoints.inject } : recipe,
    hosts,
    ...(options.url !== undefined ? { url: options.url } : {}),
    ...(path !== undefined ? { path } : {}),
    ...(options.readWrite ? { readWrite: true } : {}),
    edges: options.uses?.capability === false ? [] : options.edges,
    ...(options.shape ? { shape: options.shape } : {}),
  });
  const secret = !signed && recipe.secretField ? await options.secret() : undefined;
  const binding =
    recipe.bindsChannel && options.uses?.channel !== false
      ? botBinding(
          paths,
          name,
          recipe.bindsChannel,
          options.edges.filter((edge) => edge !== "org"),
        )
      : undefined;
  await applyConfigChange(paths, [{ file, text }, ...(binding?.change ? [binding.change] : [])]);
  let stored: string | undefined;
  if (signed) {
    await storeCredential(
      paths.vault,
      name,
      {
        ...storedFields(paths, name),
        ...options.fields,
        ...signed.credential,
      },
      { command: "connection add", ...options.origin },
    );
    stored = join(paths.vault, `${name}.json`);
  } else if (recipe.secretField && secret !== undefined) {
    // what `roster login` stored under this name before (a Slack app token, say) is kept
    await storeCredential(
      paths.vault,
      name,
      {
        ...storedFields(paths, name),
        ...options.fields,
        [recipe.secretField]: secret,
      },
      { command: "connection add", ...options.origin },
    );
    stored = join(paths.vault, `${name}.json`);
  }
  await updateState(paths, name, {
    recipe: recipe.name,
    ...(options.verifyPath !== undefined ? { verify_path: options.verifyPath } : {}),
    ...(signed ? { oauth: signed.state } : {}),
  });
  const missing = binding?.change ? listenerMissing(paths, recipe, name) : [];
  const bound = binding
    ? `${binding.said}${missing.length ? `; its listener also needs ${missing.join(", ")}: roster login ${name} ${missing.map((field) => `--field ${field}=…`).join(" ")} (it says so until then)` : ""}`
    : undefined;
  return { recipe, file, stored, ...(bound ? { bound } : {}) };
}

/** The fields a bot's listener needs that its vault credential doesn't hold yet. */
function listenerMissing(paths: RosterPaths, recipe: Recipe, name: string): string[] {
  const held = storedFields(paths, name);
  return (recipe.listenerNeeds ?? []).filter((field) => !held[field]);
}

/**
 * The name, the recipe, the workers and the extra fields, and that no
 * connection has the name yet: all refused before any secret is asked for.
 */
function checkAdd(paths: RosterPaths, options: AddOptions): { recipe: Recipe; file: string } {
  const { name } = options;
  checkName(name);
  if (name === KNOWLEDGE_REPO)
    throw new RosterError(`"${KNOWLEDGE_REPO}" is reserved for every worker's own knowledge repo`, {
      exitCode: 2,
    });
  const recipe = findRecipe(options.from);
  if (!recipe)
    throw new RosterError(
      `no recipe "${options.from}": one of ${recipes()
        .map((r) => r.name)
        .join(", ")}`,
      { exitCode: 2, hint: "roster connection catalog shows what each grants and injects" },
    );
  for (const edge of options.edges) checkName(edge, "worker");
  for (const field of Object.keys(options.fields))
    if (!FIELD.test(field) || field === recipe.secretField)
      throw new RosterError(
        `--field ${field}: a field is lower-case letters, digits or '_'${recipe.secretField ? `, and not "${recipe.secretField}" (that is the secret, never on the command line)` : ""}`,
        { exitCode: 2 },
      );
  const file = connectionFile(paths, name);
  if (existsSync(file))
    throw new RosterError(`connections/${name}.toml exists already; nothing changed`, {
      exitCode: 2,
      hint: `roster connection rm ${name} --yes first, or edit the file`,
    });
  return { recipe, file };
}

/** Where the connection reaches, as its kind says it: mcp a URL, a service its hosts, a folder its path. */
function checkReach(recipe: Recipe, options: AddOptions, hosts: string[]): void {
  if (recipe.kind === "mcp") {
    if (options.hosts.length || options.path !== undefined)
      throw new RosterError(`--from ${recipe.name} takes --url, not --host or --path`, {
        exitCode: 2,
      });
    if (!options.url || !/^https:\/\/[^\s/?#]+(\/\S*)?$/.test(options.url))
      throw new RosterError(
        `--from ${recipe.name} needs --url https://<host>[:port]/<path> (the server's MCP endpoint)`,
        { exitCode: 2 },
      );
  } else if (recipe.kind === "service") {
    if (!hosts.length)
      throw new RosterError(`--from ${recipe.name} needs --host <name> (the API's host)`, {
        exitCode: 2,
      });
    for (const host of hosts) {
      const problem = hostPatternProblem(host);
      if (problem) throw new RosterError(`--host ${host}: ${problem}`, { exitCode: 2 });
    }
  } else {
    if (options.hosts.length)
      throw new RosterError(`--from ${recipe.name} takes --path, not --host`, { exitCode: 2 });
    if (!options.path)
      throw new RosterError(`--from ${recipe.name} needs --path <folder on the host>`, {
        exitCode: 2,
      });
  }
}

/** smtp: no connections file (nothing in a box reaches it), only the vault credential the email action reads. */
async function addActionCredential(
  paths: RosterPaths,
  recipe: Recipe,
  options: AddOptions,
): Promise<Added> {
  if (options.edges.length)
    throw new RosterError(
      `--from ${recipe.name} grants nothing to a box: leave out --worker/--org`,
      {
        exitCode: 2,
      },
    );
  const [host, ...more] = options.hosts;
  if (!host || more.length)
    throw new RosterError(`--from ${recipe.name} needs one --host (the SMTP server)`, {
      exitCode: 2,
    });
  if (existsSync(join(paths.vault, `${options.name}.json`)))
    throw new RosterError(
      `the vault holds a credential "${options.name}" already; nothing changed`,
      {
        exitCode: 2,
        hint: `roster connection rm ${options.name} --yes first`,
      },
    );
  const secret = await options.secret();
  const field = recipe.secretField ?? "pass";
  await storeCredential(
    paths.vault,
    options.name,
    {
      port: "465",
      ...options.fields,
      host,
      [field]: secret,
    },
    { command: "connection add", ...options.origin },
  );
  return { recipe, file: undefined, stored: join(paths.vault, `${options.name}.json`) };
}

export type EdgeChange = { changed: boolean; kept: boolean; file: string };

export async function grantConnection(
  paths: RosterPaths,
  name: string,
  edge: string,
  grant: boolean,
  scope: Record<string, string[]> = {},
): Promise<EdgeChange> {
  checkName(name);
  checkName(edge, "worker");
  const file = connectionFile(paths, name);
  if (!existsSync(file))
    throw new RosterError(`no connection named "${name}" (connections/${name}.toml)`, {
      exitCode: 2,
    });
  const shown = `connections/${name}.toml`;
  const text = readFileSync(file, "utf8");
  const via = grant && { scope, provider: readState(paths, name).recipe };
  const edited = via ? addEdge(text, shown, edge, via) : removeEdge(text, shown, edge);
  if (!edited) return { changed: false, kept: true, file };
  await applyConfigChange(paths, [{ file, text: edited.text }]);
  return { changed: true, kept: edited.kept, file };
}

export type ConnectionStateWord = "ok" | "disabled" | "failing verify";

export interface ConnectionRow {
  name: string;
  kind: string;
  grantees: string[];
  state: ConnectionStateWord;
  detail: string;
  /** Signed in by OAuth: the scopes granted. */
  scopes?: string[];
}

/** Every connections/*.toml, hand-written or not, with its state. */
export function listConnections(paths: RosterPaths): ConnectionRow[] {
  const dir = join(paths.config, "connections");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((file) => file.endsWith(".toml"))
    .sort()
    .map((file) => {
      const name = file.slice(0, -".toml".length);
      const text = readFileSync(join(dir, file), "utf8");
      let grantees: string[] = [];
      let kind = "service";
      try {
        grantees = edgesOf(text, `connections/${file}`);
        kind = /^\s*kind\s*=\s*["']([a-z-]+)["']/m.exec(text)?.[1] ?? "service";
      } catch (error) {
        return {
          name,
          kind: "?",
          grantees,
          state: "disabled" as const,
          detail: error instanceof Error ? error.message : String(error),
        };
      }
      if (kind !== "service" && kind !== "mcp")
        return { name, kind, grantees, state: "ok" as const, detail: "a mount (no secret)" };
      if (!existsSync(join(paths.vault, `${name}.json`)))
        return {
          name,
          kind,
          grantees,
          state: "disabled" as const,
          detail: `until its secret is stored (roster connection secret ${name})`,
        };
      const state = readState(paths, name);
      const last = state.last_verify;
      // a sign-in's scopes are what it may do: shown with every state
      const scopes = state.oauth
        ? `; signed in by OAuth, scopes: ${state.oauth.scopes.join(" ") || "(the provider's default)"}`
        : "";
      if (!last)
        return {
          name,
          kind,
          grantees,
          state: "ok" as const,
          detail: `${state.oauth ? "tokens" : "secret"} stored, never verified${scopes}`,
          ...(state.oauth ? { scopes: state.oauth.scopes } : {}),
        };
      return {
        name,
        kind,
        grantees,
        state: last.ok ? ("ok" as const) : ("failing verify" as const),
        detail: `${last.detail} (as ${last.as}, ${last.at})${scopes}`,
        ...(state.oauth ? { scopes: state.oauth.scopes } : {}),
      };
    });
}

/** What `rm` removes: the file, its vault secret, its remembered state (whichever exist). */
export function removalOf(paths: RosterPaths, name: string): string[] {
  checkName(name);
  return [
    connectionFile(paths, name),
    join(paths.vault, `${name}.json`),
    metaFile(paths.vault, name),
    stateFile(paths, name),
  ].filter((file) => existsSync(file));
}

export async function removeConnection(paths: RosterPaths, name: string): Promise<string[]> {
  const removed = removalOf(paths, name);
  if (!removed.length)
    throw new RosterError(`no connection named "${name}": nothing to remove`, { exitCode: 2 });
  const file = connectionFile(paths, name);
  if (existsSync(file)) await applyConfigChange(paths, [{ file, text: null }]);
  await rm(join(paths.vault, `${name}.json`), { force: true });
  await rm(metaFile(paths.vault, name), { force: true });
  await forgetState(paths, name);
  return removed;
}
