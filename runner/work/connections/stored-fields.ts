import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { readVaultCredential } from "../../ground/vault/vault-file.ts";
import { readState } from "./connection-state.ts";
import { findRecipe } from "./recipes.ts";

/** The string fields stored under a name (kept beside a new secret); {} when none. */
export function storedFields(paths: RosterPaths, name: string): Record<string, string> {
  // a sealed file the key does not open throws: a new secret must not drop the fields beside it
  const parsed = readVaultCredential(paths.vault, name);
  if (!parsed) return {};
  return Object.fromEntries(
    Object.entries(parsed).filter(
      (entry): entry is [string, string] => typeof entry[1] === "string",
    ),
  );
}

/** The vault field a connection's template renders: `{key}` or `{token}`, read from its file. */
export function secretFieldOf(paths: RosterPaths, name: string): string {
  const text = readFileSync(join(paths.config, "connections", `${name}.toml`), "utf8");
  // a file that names its provider and no header (as the public roster writes it) takes that recipe's
  const provider = /^\s*inject_value\s*=/m.test(text)
    ? undefined
    : /^\s*provider\s*=\s*["']([a-z0-9_-]+)["']/m.exec(text)?.[1];
  const recipe = findRecipe(readState(paths, name).recipe ?? provider ?? "");
  if (recipe?.secretField) return recipe.secretField;
  const template =
    /^\s*inject_value\s*=\s*["'][^"'\n]*\{(?:b64:[^{}]*)?\{?([a-z_][a-z0-9_]*)\}/m.exec(text);
  return template?.[1] ?? "token";
}
