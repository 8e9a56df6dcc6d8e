import { chatPlatforms, type EdgeScopeTerms } from "../chat/terms.ts";
import type { InjectHeader } from "./grant-schema.ts";
import { type KnownProvider, PROVIDERS } from "./providers.ts";

/**
 * What a connection file's `provider = "<name>"` means here: the public
 * roster names an entry of its provider registry there, and this is ours.
 * A model provider (providers.ts) gives the hosts a file may leave out and
 * needs no env; a chat platform's bot (ground/chat/terms.ts) gives its
 * header and the dimensions an edge may narrow it by; the services below
 * give the header `roster connection add <name>` writes here (their recipes:
 * work/connections/recipes.ts, which a test holds to these). The header
 * applies when the file names none. Where ours takes the credential
 * otherwise than the public registry, `differs` says how (a notice); where
 * ours can't take it at all, `refused` says why, and the connection grants
 * nothing.
 */
export interface ConnectionProvider {
  name: string;
  /** A model provider's API: the hosts a connection of it reaches when its file names none. */
  modelHosts?: string[];
  /** The header the gateway adds when the file names none. */
  inject?: InjectHeader;
  /** The dimensions a `[grant.<worker>]` edge may narrow it by (servers, surfaces). */
  edgeScope?: EdgeScopeTerms;
  differs?: string;
  refused?: string;
}

/** Services whose header ours knows by name: what their recipe here injects. */
const SERVICES: Record<string, Omit<ConnectionProvider, "name">> = {
  github: {
    inject: { header: "authorization", value: "Basic {b64:x-access-token:{token}}" },
  },
  gitlab: { inject: { header: "authorization", value: "Bearer {token}" } },
  notion: {
    inject: { header: "authorization", value: "Bearer {access}" },
    differs:
      "Notion is signed in here by OAuth consent (roster connection add notion --oauth) and sent as authorization: Bearer {access}; for an integration token set inject_header and inject_value",
  },
  linear: {
    inject: { header: "authorization", value: "Bearer {access}" },
    differs:
      "Linear is signed in here by OAuth consent (roster connection add linear --oauth) and sent as authorization: Bearer {access}; for an API key set inject_header and inject_value",
  },
  // the public roster's ChatGPT sign-in for Codex: a model provider ours has no login for
  "openai-codex": {
    modelHosts: ["chatgpt.com"],
    refused:
      "roster has no ChatGPT sign-in to inject, so this connection grants nothing here; give Codex workers an OpenAI key instead (roster login openai)",
  },
};

/** What a model provider's connection is here: its API's host, and its key's header. */
function modelProvider(name: KnownProvider): ConnectionProvider {
  const facts = PROVIDERS[name];
  const [auth] = facts.auth;
  return {
    name,
    modelHosts: [new URL(facts.baseUrl).hostname],
    ...(auth ? { inject: auth } : {}),
    ...(name === "anthropic"
      ? {
          differs:
            "the gateway sends Anthropic an API key here (x-api-key: {key}, stored by roster login anthropic); a Claude sign-in (OAuth) is not taken",
        }
      : {}),
  };
}

/** The provider of that name, or undefined when ours knows none by it. */
export function connectionProvider(name: string): ConnectionProvider | undefined {
  if (Object.hasOwn(PROVIDERS, name)) return modelProvider(name as KnownProvider);
  const bot = chatPlatforms().find((platform) => platform.name === name)?.connection;
  if (bot) {
    return {
      name,
      inject: bot.inject,
      ...(bot.edgeScope ? { edgeScope: bot.edgeScope } : {}),
    };
  }
  const service = Object.hasOwn(SERVICES, name) ? SERVICES[name] : undefined;
  return service ? { name, ...service } : undefined;
}
