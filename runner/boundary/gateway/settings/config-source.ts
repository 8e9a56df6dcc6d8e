import { type Dirent, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { formatConfigError } from "../../../ground/config/config-error.ts";
import { type LoadedConfig, loadConfig } from "../../../ground/config/load.ts";

/**
 * The gateway's view of the config, re-read whenever a file changes (checked at
 * most every `intervalMs`). A broken config is kept as broken: the gateway then
 * denies everything, and says why.
 */
export class ConfigSource {
  private current: LoadedConfig;
  private fingerprint: string;
  private checkedAt = 0;
  private readonly listeners: Array<(config: LoadedConfig) => void> = [];

  constructor(
    readonly root: string,
    private readonly vaultDir: string | undefined = undefined,
    private readonly intervalMs = 500,
  ) {
    this.fingerprint = this.fingerprintNow();
    this.current = this.load();
  }

  private load(): LoadedConfig {
    return loadConfig(this.root, this.vaultDir ? { vaultDir: this.vaultDir } : {});
  }

  /** Config files, plus which credentials exist (a stored credential enables its connection). */
  private fingerprintNow(): string {
    let vault = "";
    try {
      // hidden names are the vault's own temporaries and locks (a refresh), never a credential
      vault = this.vaultDir
        ? readdirSync(this.vaultDir)
            .filter((name) => !name.startsWith("."))
            .sort()
            .join(",")
        : "";
    } catch {
      // no vault yet
    }
    return `${fingerprintOf(this.root)}#${vault}`;
  }

  get(): LoadedConfig {
    const now = Date.now();
    if (now - this.checkedAt >= this.intervalMs) {
      this.checkedAt = now;
      const next = this.fingerprintNow();
      if (next !== this.fingerprint) {
        this.fingerprint = next;
        this.current = this.load();
        for (const listener of this.listeners) listener(this.current);
      }
    }
    return this.current;
  }

  onChange(listener: (config: LoadedConfig) => void): void {
    this.listeners.push(listener);
  }

  /** One line for refusals when the config is broken, else undefined. */
  brokenReason(config: LoadedConfig = this.get()): string | undefined {
    return brokenReasonOf(config);
  }
}

/** Why a loaded config can't be used (it has errors): everything is then denied. */
export function brokenReasonOf(config: LoadedConfig): string | undefined {
  const first = config.errors[0];
  if (!first) return undefined;
  const more = config.errors.length > 1 ? ` (and ${config.errors.length - 1} more)` : "";
  return `the gateway's config is broken, so everything is denied: ${formatConfigError(first)}${more}`;
}

/** Names, sizes and mtimes of every config file: any edit changes it. */
function fingerprintOf(root: string): string {
  const parts: string[] = [];
  const visit = (dir: string, depth: number) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory() && depth < 3) visit(path, depth + 1);
      else if (entry.isFile() && entry.name.endsWith(".toml")) {
        try {
          const stat = statSync(path);
          parts.push(`${path}:${stat.size}:${stat.mtimeMs}`);
        } catch {
          // vanished between readdir and stat: the next check sees it
        }
      }
    }
  };
  visit(root, 0);
  return parts.join("|");
}
