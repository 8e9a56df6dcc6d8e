import { createInterface } from "node:readline/promises";
import { RosterError } from "../../ground/errors.ts";
import type { OAuthFlags } from "../../work/connections/oauth/endpoints.ts";
import { findRecipe, type Recipe, recipes } from "../../work/connections/recipes.ts";

/** What `roster connection add` is given: its flags, before guided questions fill the rest. */
export interface AddFlags extends OAuthFlags {
  from: string;
  host?: string[];
  url?: string;
  path?: string;
  rw?: boolean;
  worker?: string[];
  org?: boolean;
  field?: string[];
  secretEnv?: string;
  secret?: string;
  verify?: boolean;
  verifyPath?: string;
  as?: string;
  /** When the secret expires (RFC 3339 or 30d): kept as its age. */
  expires?: string;
}

/**
 * `roster connection add` as a person types it: the recipe may be the name
 * itself (`connection add github --worker elf`), and on a terminal whatever
 * the recipe needs and the flags don't give is asked for, one question each
 * (the secret is asked for later, unechoed, by secret-input.ts). Without a
 * terminal nothing is asked: the add is refused with every missing flag named.
 */
export interface Needed {
  /** The flag that gives it, as the refusal names it. */
  flag: string;
  /** The question asked on a terminal. */
  question: string;
  set(flags: AddFlags, answer: string): AddFlags;
}

// read when asked: the chat platforms' bots are recipes too
const asRecipe: Needed = {
  get flag() {
    return `--from <recipe> (one of ${recipes()
      .map((recipe) => recipe.name)
      .join(", ")})`;
  },
  get question() {
    return `which recipe? (${recipes()
      .map((recipe) => recipe.name)
      .join(", ")})`;
  },
  set: (flags, answer) => ({ ...flags, from: answer }),
};

/** What the recipe needs to know where it reaches, when the flags don't say. */
function reachNeeded(recipe: Recipe, flags: AddFlags): Needed[] {
  if (recipe.kind === "service" && !recipe.hosts?.length && !flags.host?.length)
    return [
      {
        flag: "--host <name> (the API's host)",
        question: "the API's host (e.g. api.example.com)",
        set: (given, answer) => ({ ...given, host: [answer] }),
      },
    ];
  if (recipe.kind === "mcp" && flags.url === undefined)
    return [
      {
        flag: "--url <https://host/path> (the MCP server's endpoint)",
        question: "the MCP server's endpoint (https://…)",
        set: (given, answer) => ({ ...given, url: answer }),
      },
    ];
  if ((recipe.kind === "host-dir" || recipe.kind === "host-repo") && flags.path === undefined)
    return [
      {
        flag: "--path <folder> (the folder on the host)",
        question: "the folder on the host",
        set: (given, answer) => ({ ...given, path: answer }),
      },
    ];
  return [];
}

/** A sign-in by consent needs the id the provider gave roster's client. */
function clientNeeded(recipe: Recipe, flags: AddFlags): Needed[] {
  if (!flags.oauth || flags.clientId) return [];
  const where = recipe.oauth?.registerAt;
  return [
    {
      flag: `--client-id <id> (the id the provider gave roster${where ? `: ${where}` : ""})`,
      question: `the OAuth client id the provider gave roster${where ? ` (${where})` : ""}`,
      set: (given, answer) => ({ ...given, clientId: answer }),
    },
  ];
}

/** Who gets it: asked on a terminal only (a script may add one for nobody yet, as before). */
const grantee: Needed = {
  flag: "--worker <worker> or --org",
  question: 'grant it to which worker? (a name; "org" for every worker; empty for none yet)',
  set: (flags, answer) =>
    answer === "org" ? { ...flags, org: true } : answer ? { ...flags, worker: [answer] } : flags,
};

/** A bare `connection add`: the service, picked from the catalogue, names the connection too. */
const asService: Needed = {
  get flag() {
    return `the service to connect (one of ${recipes()
      .map((recipe) => recipe.name)
      .join(", ")}): roster connection add <service>`;
  },
  get question() {
    return `connect which service? (${recipes()
      .map((recipe) => recipe.name)
      .join(", ")})`;
  },
  set: (flags, answer) => ({ ...flags, from: answer }),
};

/**
 * The connection's name and its flags: with no name, the service asked for
 * (it names the connection); the recipe read from the name when it names
 * one, and what is missing asked for.
 */
export async function guidedAddFlags(
  named: string | undefined,
  given: Partial<AddFlags>,
  terminal = process.stdin.isTTY === true,
): Promise<{ name: string; flags: AddFlags }> {
  const ask = terminal ? questioner() : undefined;
  try {
    let name = named;
    if (name === undefined) {
      if (given.from !== undefined) name = given.from;
      else if (!ask) throw missing([asService]);
      else name = await ask(asService.question);
    }
    return { name, flags: await guided(name, given, ask) };
  } finally {
    ask?.close();
  }
}

async function guided(
  name: string,
  given: Partial<AddFlags>,
  ask: ReturnType<typeof questioner> | undefined,
): Promise<AddFlags> {
  // --declare, or a host given, names any API: a bearer token from it, unless a recipe is named
  const from =
    given.from ?? (findRecipe(name) ? name : given.declare || given.host?.length ? "bearer" : "");
  let flags: AddFlags = { ...given, from };
  if (!flags.from) {
    if (!ask) throw missing([asRecipe]);
    flags = asRecipe.set(flags, await ask(asRecipe.question));
  }
  const recipe = findRecipe(flags.from);
  // an unknown recipe is refused by the add itself, naming the recipes
  if (!recipe) return flags;
  // the forms of --oauth, and a recipe with no secret to paste, sign in by consent
  const oauthOnly = recipe.oauth !== undefined && recipe.secretField === undefined;
  if (flags.device || flags.declare || oauthOnly) flags = { ...flags, oauth: true };
  const needed = [...reachNeeded(recipe, flags), ...clientNeeded(recipe, flags)];
  if (!ask) {
    if (needed.length) throw missing(needed);
    return flags;
  }
  for (const one of needed) flags = one.set(flags, await ask(one.question));
  const granted = flags.org || flags.worker?.length || recipe.kind === "action-credential";
  if (!granted) flags = grantee.set(flags, await ask(grantee.question));
  return flags;
}

function missing(needed: Needed[]): RosterError {
  return new RosterError(
    `not in a terminal, so nothing was asked and nothing changed; missing: ${needed.map((one) => one.flag).join("; ")}`,
    { exitCode: 2 },
  );
}

/** One question at a time on the terminal (stderr, so stdout stays what the command printed). */
function questioner(): ((question: string) => Promise<string>) & { close(): void } {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  const ask = async (question: string) => (await rl.question(`${question}: `)).trim();
  return Object.assign(ask, { close: () => rl.close() });
}
