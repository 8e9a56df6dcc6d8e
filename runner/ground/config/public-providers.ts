import { existsSync } from "node:fs";
import { Type } from "@sinclair/typebox";
import type { ConfigError } from "./config-error.ts";
import { InjectHeader } from "./grant-schema.ts";
import { defaultAuth, knownProvider, PROVIDERS } from "./providers.ts";
import { isTable, noteAt, type PublicFile, refuseAt } from "./public-spelling.ts";
import { readToml, validateToml } from "./toml-file.ts";

/**
 * The public roster's provider registry where a deployment reaches it:
 * `providers.toml` beside org.toml (one table per provider) and a grant's
 * `inject.provider`, which there renders the credential by that provider's
 * templates. Ours has no registry beyond the model providers it knows
 * (providers.ts), so of providers.toml only each entry's `inject` is read —
 * the header templates, the same shape as a grant's `headers` — and a
 * grant's provider becomes the headers it stands for, with a notice.
 */

/** Each provider providers.toml declares, with its header templates (undefined: it gives none). */
export type ProviderTemplates = Map<string, InjectHeader[] | undefined>;

const ProvidersFile = Type.Record(
  Type.String({ minLength: 1 }),
  Type.Object(
    { inject: Type.Optional(Type.Array(InjectHeader, { minItems: 1 })) },
    // the registry's other keys (auth, login, connection, brief, …) are said, not refused
    { additionalProperties: true },
  ),
);

export function readProviders(
  file: string,
  display: string,
  errors: ConfigError[],
  notices: ConfigError[],
): ProviderTemplates {
  const providers: ProviderTemplates = new Map();
  if (!existsSync(file)) return providers;
  const raw = readToml(file, display, errors);
  const read =
    raw &&
    validateToml<Record<string, Record<string, unknown>>>(raw, display, ProvidersFile, errors);
  if (!read) return providers;
  const at: PublicFile = { file: display, text: read.text, notices, errors };
  for (const [name, entry] of Object.entries(read.value)) {
    providers.set(name, entry.inject as InjectHeader[] | undefined);
    const unread = Object.keys(entry).filter((key) => key !== "inject");
    if (unread.length)
      noteAt(
        at,
        `/${name}`,
        `${unread.join(", ")} not read here: \`roster login ${name}\` stores its credential and a connection file names its own hosts and env; only inject is read, for a [[grant]] whose inject.provider = "${name}"`,
      );
  }
  return providers;
}

const spelled = (headers: InjectHeader[]) =>
  `headers = [${headers.map((h) => `{ header = "${h.header}", value = "${h.value}" }`).join(", ")}]`;

/** Each `[[grant]]`'s `inject.provider`, as the headers it stands for (or the credential's default). */
export function adoptInjectProviders(
  config: Record<string, unknown>,
  at: PublicFile,
  providers: ProviderTemplates,
): void {
  const grants = config.grant;
  if (!Array.isArray(grants)) return;
  grants.forEach((grant, index) => {
    const inject = isTable(grant) && isTable(grant.inject) ? grant.inject : undefined;
    if (!inject || !("provider" in inject)) return;
    const provider = inject.provider;
    delete inject.provider;
    const pointer = `/grant/${index}/inject/provider`;
    if (typeof provider !== "string" || !provider) {
      refuseAt(at, pointer, `must be a provider's name (found ${JSON.stringify(provider)})`);
      return;
    }
    if (inject.headers !== undefined) {
      noteAt(at, pointer, `not used, as in the public roster: the headers this grant names decide`);
      return;
    }
    if (providers.has(provider)) {
      const declared = providers.get(provider);
      if (!declared)
        refuseAt(
          at,
          pointer,
          `"${provider}" in providers.toml has no inject, so nothing would be injected; give it one there, or name headers here`,
        );
      else {
        inject.headers = declared.map((header) => ({ ...header }));
        noteAt(
          at,
          pointer,
          `taken as providers.toml's inject for "${provider}" (our spelling: ${spelled(declared)})`,
        );
      }
      return;
    }
    const known = knownProvider(provider);
    if (known) {
      inject.headers = known.auth.map((header) => ({ ...header }));
      noteAt(at, pointer, `taken as ${provider}'s headers (our spelling: ${spelled(known.auth)})`);
      return;
    }
    const credential = typeof inject.credential === "string" ? inject.credential : "";
    noteAt(
      at,
      pointer,
      `roster knows the headers of ${Object.keys(PROVIDERS).join(" and ")} only (and what providers.toml declares): "${credential}" goes as its default here, ${spelled(defaultAuth(credential))}; name headers in this inject if "${provider}" wants others`,
    );
  });
}
