import type { Inject, InjectHeader } from "../../../ground/config/grant-schema.ts";
import { hostName } from "../../../ground/config/host-name.ts";
import { defaultAuth } from "../../../ground/config/providers.ts";
import { readVaultCredential } from "../../../ground/vault/vault-file.ts";

/**
 * Real credentials, host-side only: data/vault/<name>.json (0600), read at the
 * moment a request is forwarded and rendered into headers by the grant's
 * templates. Nothing here is ever written to the audit log but header names.
 */
export type Credential = Record<string, unknown>;

/**
 * Undefined when absent; a sealed file the vault key does not open throws
 * one line naming the file (vault-file.ts). Its age is in a file of its own
 * (<name>.meta.json), so no `{field}` below can render it.
 */
export function readCredential(vaultDir: string, name: string): Credential | undefined {
  return readVaultCredential(vaultDir, name);
}

/** The grant's header templates, or the credential's defaults when it names none. */
export function templatesFor(inject: Inject): InjectHeader[] {
  return inject.headers ?? defaultAuth(inject.credential);
}

/**
 * Renders `{field}` and `{b64:…}` (base64 of the rendered inside; nesting allowed).
 * Undefined when a field is missing or not a string: that entry is skipped.
 */
export function renderTemplate(template: string, credential: Credential): string | undefined {
  let out = "";
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf("{", i);
    if (open < 0) {
      out += template.slice(i);
      break;
    }
    out += template.slice(i, open);
    const close = matchingBrace(template, open);
    if (close < 0) return undefined;
    const inner = template.slice(open + 1, close);
    if (inner.startsWith("b64:")) {
      const rendered = renderTemplate(inner.slice(4), credential);
      if (rendered === undefined) return undefined;
      out += Buffer.from(rendered, "utf8").toString("base64");
    } else {
      const value = credential[inner];
      if (typeof value !== "string") return undefined;
      out += value;
    }
    i = close + 1;
  }
  return out;
}

function matchingBrace(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === "{") depth++;
    else if (text[i] === "}") {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}

/** The headers to set for `host`: the last applicable entry per header name wins. */
export function renderInjection(
  templates: InjectHeader[],
  credential: Credential,
  host: string,
): Map<string, string> {
  const headers = new Map<string, string>();
  for (const entry of templates) {
    if (entry.hosts && !entry.hosts.map(hostName).includes(hostName(host))) continue;
    const value = renderTemplate(entry.value, credential);
    if (value !== undefined) headers.set(entry.header.toLowerCase(), value);
  }
  return headers;
}
