import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Where the offline base gets its Debian packages: the mirror the host itself
 * uses (its apt sources), so a machine that can install Debian packages can
 * build a box. ROSTER_DEBIAN_MIRROR overrides it.
 */
export interface DebianSources {
  /** Mirror for `bookworm` and `bookworm-updates`. */
  mirror: string;
  /** Mirror for `bookworm-security`, when the host has one. */
  security: string | undefined;
}

interface SourceEntry {
  uri: string;
  suites: string[];
}

/** Parses one-line (`deb URI suite comps`) and deb822 (`URIs:`/`Suites:`) apt sources. */
export function parseAptSources(text: string): SourceEntry[] {
  const entries: SourceEntry[] = [];
  const stanzas = text.split(/\n\s*\n/);
  for (const stanza of stanzas) {
    const fields = new Map<string, string>();
    for (const raw of stanza.split("\n")) {
      const line = raw.trim();
      if (line === "" || line.startsWith("#")) continue;
      const oneLine = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(line);
      if (oneLine?.[1] && oneLine[2]) {
        entries.push({ uri: oneLine[1], suites: [oneLine[2]] });
        continue;
      }
      const field = /^([A-Za-z-]+):\s*(.*)$/.exec(line);
      if (field?.[1] && field[2] !== undefined) fields.set(field[1].toLowerCase(), field[2]);
    }
    const types = fields.get("types") ?? "";
    const uris = fields.get("uris");
    const suites = fields.get("suites");
    if (uris && suites && types.split(/\s+/).includes("deb")) {
      for (const uri of uris.split(/\s+/)) entries.push({ uri, suites: suites.split(/\s+/) });
    }
  }
  return entries;
}

function readHostSources(root: string): string {
  const texts: string[] = [];
  const read = (path: string) => {
    try {
      texts.push(readFileSync(path, "utf8"));
    } catch {
      // absent is fine: we look at whatever the host has
    }
  };
  read(join(root, "etc/apt/sources.list"));
  try {
    for (const name of readdirSync(join(root, "etc/apt/sources.list.d")).sort()) {
      if (name.endsWith(".list") || name.endsWith(".sources")) {
        read(join(root, "etc/apt/sources.list.d", name));
      }
    }
  } catch {
    // no sources.list.d
  }
  return texts.join("\n\n");
}

export function debianSources(
  env: NodeJS.ProcessEnv = process.env,
  hostRoot = "/",
): DebianSources | undefined {
  const entries = parseAptSources(readHostSources(hostRoot));
  const security = entries.find((entry) => entry.suites.includes("bookworm-security"))?.uri;
  const override = env.ROSTER_DEBIAN_MIRROR?.trim();
  if (override) return { mirror: override, security };
  const main = entries.find((entry) => entry.suites.includes("bookworm"))?.uri;
  return main ? { mirror: main, security } : undefined;
}

/** The deb822 sources file written into the base: main, updates and security. */
export function baseSourcesFile(sources: DebianSources): string {
  const stanza = (uri: string, suites: string) =>
    [
      "Types: deb",
      `URIs: ${uri}`,
      `Suites: ${suites}`,
      "Components: main",
      "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg",
    ].join("\n");
  const parts = [stanza(sources.mirror, "bookworm bookworm-updates")];
  if (sources.security) parts.push(stanza(sources.security, "bookworm-security"));
  return `${parts.join("\n\n")}\n`;
}
