import { RosterError } from "../../ground/errors.ts";
import type { ConnectionShape } from "../../work/connections/connection-file.ts";
import type { Recipe } from "../../work/connections/recipes.ts";
import type { AddFlags } from "./connection-guided.ts";

/**
 * `roster connection add` as the public roster spells it: the word after
 * `add` is the service (a recipe here) and `--name` the connection when it
 * differs; `--header "Authorization: Bearer {token}"`, `--env`, `--method`
 * say what the recipe would; `--auth api_key|oauth` picks the sign-in;
 * `--use channel|capability` which uses of a chat bot to set up.
 */
export interface PublicAddFlags {
  name?: string;
  header?: string;
  env?: string;
  method?: string[];
  use?: string[];
  auth?: string;
}

export type Use = "capability" | "channel";
const USES: readonly Use[] = ["capability", "channel"];
const usage = (message: string) => new RosterError(message, { exitCode: 2 });

/** The connection's name (undefined: the guided session asks) and our flags. */
export function readPublicAdd(
  word: string | undefined,
  given: Partial<AddFlags> & PublicAddFlags,
): { name: string | undefined; flags: Partial<AddFlags> } {
  const { name, header: _h, env: _e, method: _m, use: _u, auth, ...flags } = given;
  if (auth !== undefined && auth !== "api_key" && auth !== "oauth")
    throw usage(`--auth ${auth}: expected api_key (a pasted secret) or oauth (a sign-in)`);
  if (auth === "oauth") flags.oauth = true;
  if (auth === "api_key" && (flags.oauth || flags.device))
    throw usage("--auth api_key pastes a secret: leave out --oauth and --device");
  if (name === undefined) return { name: word, flags };
  if (word !== undefined && flags.from !== undefined)
    throw usage(
      `connection add ${word} --name ${name} --from ${flags.from}: name the service once, as the first word or --from`,
    );
  return { name, flags: word !== undefined ? { ...flags, from: word } : flags };
}

/** --method, --header and --env, once the recipe is known; undefined when none was given. */
export function shapeOf(
  given: PublicAddFlags,
  recipe: Recipe | undefined,
): ConnectionShape | undefined {
  const shaped = given.header !== undefined || given.env !== undefined || given.method?.length;
  if (!shaped) return undefined;
  if (recipe && recipe.kind !== "service")
    throw usage(
      `--header, --env and --method shape an HTTPS service; recipe ${recipe.name} is a ${recipe.kind}`,
    );
  return {
    ...(given.method?.length ? { methods: given.method.map(method) } : {}),
    ...(given.header !== undefined ? { inject: header(given.header, recipe) } : {}),
    ...(given.env !== undefined ? { env: envName(given.env) } : {}),
  };
}

/** --use: which of a chat bot's uses to set up; undefined for all it has. */
export function usesOf(
  given: PublicAddFlags,
  recipe: Recipe | undefined,
): { capability: boolean; channel: boolean } | undefined {
  if (!given.use?.length) return undefined;
  const has: Use[] = recipe?.bindsChannel ? ["capability", "channel"] : ["capability"];
  for (const use of given.use) {
    if (!(USES as readonly string[]).includes(use))
      throw usage(
        `--use ${use}: roster sets up ${USES.join(" and ")}${use === "model" ? " (a model key is stored by roster login <provider>)" : ""}`,
      );
    if (!(has as readonly string[]).includes(use))
      throw usage(`--use ${use}: ${recipe?.name ?? "this service"} is used as ${has.join(", ")}`);
  }
  return { capability: given.use.includes("capability"), channel: given.use.includes("channel") };
}

function method(value: string): string {
  const upper = value.toUpperCase();
  if (upper !== "*" && !/^[A-Z]+$/.test(upper))
    throw usage(`--method ${value}: an HTTP method (GET, POST, …) or * for all`);
  return upper;
}

function envName(value: string): string {
  if (!/^[A-Z][A-Z0-9_]*$/.test(value))
    throw usage(`--env ${value}: an environment variable name in UPPER_SNAKE case`);
  return value;
}

/**
 * "Authorization: Bearer {token}": the header's name, and its value with
 * `{token}` (the public roster's name for the secret) read as the field the
 * recipe stores the secret in.
 */
function header(template: string, recipe: Recipe | undefined): { header: string; value: string } {
  const at = template.indexOf(":");
  const name = template.slice(0, at).trim();
  const value = template.slice(at + 1).trim();
  if (at < 1 || !/^[A-Za-z0-9-]+$/.test(name) || !value)
    throw usage(
      `--header ${template}: expected "Name: value", e.g. "Authorization: Bearer {token}"`,
    );
  const field = recipe?.secretField ?? "token";
  const read = value.replaceAll("{token}", `{${field}}`);
  if (!read.includes(`{${field}}`))
    throw usage(`--header ${template}: the value needs {token}, where the gateway puts the secret`);
  return { header: name.toLowerCase(), value: read };
}
