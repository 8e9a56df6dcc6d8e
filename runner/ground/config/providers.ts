import type { InjectHeader } from "./grant-schema.ts";

/**
 * What roster knows about each model provider, in one place: where its API
 * is, which env variable its client reads the key from (the box gets a
 * sentinel there; `roster login` reads the real key from it), and how the key
 * rides on a request. The config builds the model grant from this, the
 * gateway injects by it when a grant names a provider's credential and no
 * headers, and `roster login` reads the key's env variable from it.
 *
 * A model key is stored by `roster login <provider>` as the field `key`, so
 * every provider template renders `{key}`. Any other credential is a service
 * token (`roster login github --field token=…`, a connection): when nothing
 * names its header it goes as `Bearer {token}`.
 */
export type KnownProvider = "anthropic" | "openai";

export interface ProviderFacts {
  baseUrl: string;
  keyEnv: string;
  auth: InjectHeader[];
}

const BEARER_KEY: InjectHeader = { header: "authorization", value: "Bearer {key}" };

export const PROVIDERS: Record<KnownProvider, ProviderFacts> = {
  anthropic: {
    baseUrl: "https://api.anthropic.com",
    keyEnv: "ANTHROPIC_API_KEY",
    auth: [{ header: "x-api-key", value: "{key}" }],
  },
  openai: {
    baseUrl: "https://api.openai.com/v1",
    keyEnv: "OPENAI_API_KEY",
    auth: [BEARER_KEY],
  },
};

/** The facts of a provider roster knows by name; undefined for openai-compatible or any other name. */
export function knownProvider(name: string): ProviderFacts | undefined {
  return Object.hasOwn(PROVIDERS, name) ? PROVIDERS[name as KnownProvider] : undefined;
}

/**
 * How a model's key goes to its endpoint: the provider's own header, and for
 * an openai-compatible server the OpenAI way (a bearer key), since it speaks
 * OpenAI's protocol.
 */
export function modelAuth(provider: string): InjectHeader[] {
  return knownProvider(provider)?.auth ?? [BEARER_KEY];
}

/** A service credential's header when its grant or connection names none. */
export const SERVICE_TOKEN_AUTH: InjectHeader = {
  header: "authorization",
  value: "Bearer {token}",
};

/** The headers to inject for a credential whose grant names none: a provider key, or a service token. */
export function defaultAuth(credential: string): InjectHeader[] {
  return knownProvider(credential)?.auth ?? [SERVICE_TOKEN_AUTH];
}
