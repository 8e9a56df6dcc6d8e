/**
 * What `roster connection …` does: the recipe catalog, adding connections and
 * their secrets, granting and revoking them, verifying, listing and removing.
 * The CLI only declares these commands; this module is loaded when one runs.
 */
import { rosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";
import type { Recipe } from "../../work/connections/recipes.ts";
import type { AddFlags } from "./connection-guided.ts";
import type { PublicAddFlags } from "./connection-public.ts";

export type { AddFlags, PublicAddFlags };

export interface SecretFlags {
  secretEnv?: string;
  field?: string[];
  secret?: string;
  verify?: boolean;
  as?: string;
  expires?: string;
}

const NO_SECRET_ARGUMENT =
  "a secret is never taken on the command line (shell history, ps): pipe it on stdin, name an env variable with --secret-env, or type it when asked";

/** `roster connection catalog`: the built-in recipes. */
export async function catalogCommand(flags: { json?: boolean }): Promise<void> {
  const { recipes, grantsOf, injectsOf } = await import("../../work/connections/recipes.ts");
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(recipes(), null, 2)}\n`);
    return;
  }
  for (const recipe of recipes()) {
    process.stdout.write(
      `${recipe.name}\n  ${recipe.summary}\n  grants:  ${grantsOf(recipe)}\n  injects: ${injectsOf(recipe)}\n${recipe.verify ? `  verify:  ${recipe.verify.method} ${recipe.verify.path}\n` : ""}${recipe.oauth ? `  sign-in: --oauth${recipe.oauth.deviceUrl ? " or --device" : ""}; scopes ${recipe.oauth.scopes.join(" ") || "(the provider's default)"}\n` : ""}`,
    );
  }
}

/**
 * `roster connection add`: the file from a recipe, its secret, and a verify
 * when asked. With no name, the service is asked for (connection-guided.ts);
 * the public roster's flags are read as ours (connection-public.ts).
 */
export async function addConnectionCommand(
  word: string | undefined,
  given: Partial<AddFlags> & PublicAddFlags,
): Promise<void> {
  if (given.secret !== undefined) throw new RosterError(NO_SECRET_ARGUMENT, { exitCode: 2 });
  const { originOf } = await import("./connection-age.ts");
  const origin = originOf(given.expires);
  const { readPublicAdd, shapeOf, usesOf } = await import("./connection-public.ts");
  const spelled = readPublicAdd(word, given);
  const { guidedAddFlags } = await import("./connection-guided.ts");
  const { name, flags } = await guidedAddFlags(spelled.name, spelled.flags);
  const { findRecipe } = await import("../../work/connections/recipes.ts");
  const recipe = findRecipe(flags.from);
  const shape = shapeOf(given, recipe);
  const uses = usesOf(given, recipe);
  const { addConnection } = await import("../../work/connections/manage.ts");
  const { readSecret } = await import("../../work/connections/secret-input.ts");
  const paths = rosterPaths();
  const added = await addConnection(paths, {
    name,
    from: flags.from,
    hosts: flags.host ?? [],
    ...(flags.url !== undefined ? { url: flags.url } : {}),
    ...(flags.path !== undefined ? { path: flags.path } : {}),
    ...(flags.rw ? { readWrite: true } : {}),
    edges: [...(flags.worker ?? []), ...(flags.org ? ["org"] : [])],
    ...(flags.verifyPath !== undefined ? { verifyPath: flags.verifyPath } : {}),
    fields: parseFields(flags.field ?? []),
    secret: () => readSecret({ label: name, secretEnv: flags.secretEnv }),
    ...(flags.oauth ? { signIn: (recipe: Recipe) => signInFor(paths, name, recipe, flags) } : {}),
    ...(shape ? { shape } : {}),
    ...(uses ? { uses } : {}),
    origin,
  });
  if (added.file) process.stdout.write(`wrote ${added.file} (from recipe ${added.recipe.name})\n`);
  if (added.stored)
    process.stdout.write(
      `stored its secret in ${added.stored} (mode 0600; only the gateway reads it)\n`,
    );
  if (added.bound) process.stdout.write(`${added.bound}\n`);
  if (added.recipe.note) process.stdout.write(`note: ${added.recipe.note}\n`);
  if (flags.verify) await verifyCommand(name, flags);
}

/** The sign-in, with the client secret from --client-secret-env or (on a terminal, optional) typed. */
async function signInFor(
  paths: ReturnType<typeof rosterPaths>,
  name: string,
  recipe: Recipe,
  flags: AddFlags,
): ReturnType<typeof import("../../work/connections/oauth/sign-in.ts").signIn> {
  const { loadConfig } = await import("../../ground/config/load.ts");
  const { signIn } = await import("../../work/connections/oauth/sign-in.ts");
  const { askQuietly, readSecret } = await import("../../work/connections/secret-input.ts");
  const clientSecret =
    flags.clientSecretEnv !== undefined
      ? await readSecret({ label: `${name}'s OAuth client`, secretEnv: flags.clientSecretEnv })
      : process.stdin.isTTY && flags.clientId
        ? await askQuietly(`client secret for ${name} (not shown; empty for a public client): `)
        : "";
  const config = loadConfig(paths.config, { vaultDir: paths.vault });
  return signIn(
    config,
    name,
    recipe,
    { ...flags, ...(clientSecret ? { clientSecret } : {}) },
    (line) => process.stderr.write(`${line}\n`),
    paths.vault,
  );
}

/**
 * `roster connection secret`: store or replace the secret, never taken as an
 * argument; `--field` stores non-secret fields beside it, and for a name no
 * connection has (the parent proxy's credential) the secret is its password.
 */
export async function storeSecretCommand(name: string, flags: SecretFlags): Promise<void> {
  if (flags.secret !== undefined) throw new RosterError(NO_SECRET_ARGUMENT, { exitCode: 2 });
  const { originOf } = await import("./connection-age.ts");
  const origin = originOf(flags.expires);
  const fields = parseFields(flags.field ?? []);
  const paths = rosterPaths();
  const { connectionFile } = await import("../../work/connections/manage.ts");
  const { existsSync } = await import("node:fs");
  if (flags.verify && !existsSync(connectionFile(paths, name)))
    throw new RosterError(
      `--verify: "${name}" is no connection (connections/${name}.toml), so nothing is called through the gateway with it; nothing stored`,
      { exitCode: 2 },
    );
  const { storeSecret } = await import("../../work/connections/store-secret.ts");
  const { readSecret } = await import("../../work/connections/secret-input.ts");
  const stored = await storeSecret(
    paths,
    name,
    // a connection's prompt names it; a user-and-password credential's names the password
    ({ field, connection }) =>
      readSecret({ label: connection ? name : `${name}'s ${field}`, secretEnv: flags.secretEnv }),
    { fields, origin },
  );
  const beside = stored.beside.length ? `, beside ${stored.beside.join(", ")}` : "";
  process.stdout.write(
    `stored the secret of "${name}" (its ${stored.field}${beside}) in ${stored.file} (mode 0600)\n`,
  );
  if (flags.verify) await verifyCommand(name, flags);
}

/**
 * `roster connection grant` / `revoke`: one [grant.<worker>] table added or
 * removed; `--restrict servers=…` / `surfaces=…` writes the edge's
 * dimensions (the loader checks them against the provider's, as for a
 * hand-written file).
 */
export async function grantCommand(
  verb: "grant" | "revoke",
  name: string,
  worker: string | undefined,
  flags: { org?: boolean; restrict?: string[] },
): Promise<void> {
  const grant = verb === "grant";
  if ((worker === undefined) === !flags.org)
    throw new RosterError(`${verb} needs one worker, or --org`, { exitCode: 2 });
  const edge = flags.org ? "org" : (worker ?? "");
  const scope = parseRestrict(flags.restrict ?? []);
  const { grantConnection } = await import("../../work/connections/manage.ts");
  const change = await grantConnection(rosterPaths(), name, edge, grant, scope);
  const who = edge === "org" ? "every worker (org)" : edge;
  if (!change.changed) {
    process.stdout.write(
      `${name} is ${grant ? "already" : "not"} granted to ${who}; nothing changed\n`,
    );
    return;
  }
  process.stdout.write(
    `${grant ? "granted" : "revoked"} ${name} ${grant ? "to" : "from"} ${who} in ${change.file}${change.kept ? "" : " (its inline grant table was rewritten, so its comments were not kept)"}\n`,
  );
}

/** `roster connection ls`: every connection with its grantees and state. */
export async function listConnectionsCommand(flags: { json?: boolean }): Promise<void> {
  const { listConnections } = await import("../../work/connections/manage.ts");
  const { ageOf, ageWords } = await import("./connection-age.ts");
  const paths = rosterPaths();
  const rows = listConnections(paths).map((row) => {
    const age = ageOf(paths.vault, row.name);
    return { ...row, ...(age ? { age } : {}) };
  });
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(rows)}\n`);
    return;
  }
  if (!rows.length) {
    process.stdout.write(
      "no connections (roster connection catalog, then roster connection add)\n",
    );
    return;
  }
  for (const row of rows)
    process.stdout.write(
      `${row.name}  ${row.kind}  granted to ${row.grantees.length ? row.grantees.join(", ") : "nobody"}  ${row.state}: ${row.detail}${ageWords(row.age)}\n`,
    );
}

/** `roster connection rm`: says what would go, and removes it only with --yes. */
export async function removeConnectionCommand(
  name: string,
  flags: { yes?: boolean },
): Promise<void> {
  const { removalOf, removeConnection } = await import("../../work/connections/manage.ts");
  const paths = rosterPaths();
  if (!flags.yes) {
    const would = removalOf(paths, name);
    if (!would.length)
      throw new RosterError(`no connection named "${name}": nothing to remove`, {
        exitCode: 2,
      });
    throw new RosterError(`would remove ${would.join(", ")}; nothing removed without --yes`, {
      exitCode: 2,
      hint: `roster connection rm ${name} --yes`,
    });
  }
  // signed out at the provider first, while the vault still holds what to revoke
  const { signOutSaid } = await import("../../work/connections/oauth/sign-out-said.ts");
  const signedOut = await signOutSaid(paths, name);
  const removed = await removeConnection(paths, name);
  process.stdout.write(`removed ${removed.join(", ")}\n`);
  if (signedOut) {
    process.stdout.write(`${signedOut.line}\n`);
    if (!signedOut.ok) process.exitCode = 1;
  }
}

/** `roster connection verify`, and `--verify` after add or secret: one real call through the gateway. */
export async function verifyCommand(
  name: string,
  flags: { as?: string | undefined; verifyPath?: string | undefined },
): Promise<void> {
  const { verifyConnection } = await import("../../work/connections/verify.ts");
  const result = await verifyConnection(rosterPaths(), name, {
    ...(flags.as !== undefined ? { as: flags.as } : {}),
    ...(flags.verifyPath !== undefined ? { verifyPath: flags.verifyPath } : {}),
  });
  process.stdout.write(
    `verify ${name} (as ${result.as}): ${result.ok ? result.detail : `failing: ${result.detail}`}\n`,
  );
  if (!result.ok) process.exitCode = 1;
}

/** `--restrict servers=111,222` (repeatable): each dimension's ids; one dimension once. */
function parseRestrict(entries: string[]): Record<string, string[]> {
  const scope: Record<string, string[]> = {};
  for (const entry of entries) {
    const at = entry.indexOf("=");
    const dim = entry.slice(0, at).trim();
    const ids = entry
      .slice(at + 1)
      .split(",")
      .map((id) => id.trim())
      .filter(Boolean);
    if (at < 1 || !/^[a-z][a-z_]*$/.test(dim) || !ids.length)
      throw new RosterError(
        `--restrict ${entry}: expected DIM=ID,ID…, e.g. servers=1234 or surfaces=public,dm`,
        { exitCode: 2 },
      );
    if (scope[dim])
      throw new RosterError(
        `--restrict ${dim} is given twice: list its ids once, comma-separated`,
        {
          exitCode: 2,
        },
      );
    scope[dim] = [...new Set(ids)];
  }
  return scope;
}

function parseFields(entries: string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const entry of entries) {
    const at = entry.indexOf("=");
    if (at < 1) throw new RosterError(`--field ${entry}: expected name=value`, { exitCode: 2 });
    fields[entry.slice(0, at)] = entry.slice(at + 1);
  }
  return fields;
}
