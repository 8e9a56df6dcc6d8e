import { createHash } from "node:crypto";
import { type Dirent, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { type LoadedConfig, loadConfig } from "./load.ts";

/**
 * A config's digest: which config judged a request, started a run, or is
 * kept in the history. It covers every `.toml` file of the config folder up
 * to three folders down (the set a change is watched in, and a superset of
 * what the loader reads), sorted by path, each as its path under the folder
 * ("/"-separated), a NUL, its length in decimal, a NUL, then its bytes; the
 * digest is the SHA-256 of all of that, in hex. Two configs with the same
 * files byte for byte have the same digest, and any edit, a file added or
 * removed included, changes it.
 */
export interface ConfigFile {
  /** Its path under the config folder, "/"-separated: `org.toml`, `workers/elf/worker.toml`. */
  path: string;
  bytes: Buffer;
}

/** How far down the config folder files are read: `workers/<w>/worker.toml` is two. */
export const CONFIG_DEPTH = 3;

/** Digests are said by their first 12 hex digits where a person reads them. */
export const SHORT_DIGEST = 12;

export const shortDigest = (digest: string) => digest.slice(0, SHORT_DIGEST);

/**
 * The config's `.toml` files, sorted by path: regular files and symlinks to
 * one (a file a config manager links in is read like any other), in folders
 * at most CONFIG_DEPTH down (a symlinked folder is not followed).
 */
export function configFilePaths(root: string): string[] {
  const found: string[] = [];
  const visit = (dir: string, prefix: string, depth: number) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const path = `${prefix}${entry.name}`;
      if (entry.isDirectory()) {
        if (depth < CONFIG_DEPTH) visit(join(dir, entry.name), `${path}/`, depth + 1);
      } else if (entry.name.endsWith(".toml") && (entry.isFile() || linksToFile(dir, entry))) {
        found.push(path);
      }
    }
  };
  visit(root, "", 0);
  return found.sort(byPath);
}

/** Code-unit order: the same on every machine and locale. */
function byPath(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function linksToFile(dir: string, entry: Dirent): boolean {
  if (!entry.isSymbolicLink()) return false;
  try {
    return statSync(join(dir, entry.name)).isFile();
  } catch {
    return false;
  }
}

/** Every config file's bytes, as they are now; one that vanished between listing and reading is left out. */
export function readConfigFiles(root: string): ConfigFile[] {
  return configFilePaths(root).flatMap((path) => {
    try {
      return [{ path, bytes: readFileSync(join(root, path)) }];
    } catch {
      return [];
    }
  });
}

export function configDigest(files: readonly ConfigFile[]): string {
  const hash = createHash("sha256");
  for (const file of [...files].sort((a, b) => byPath(a.path, b.path))) {
    hash.update(`${file.path}\0${file.bytes.length}\0`);
    hash.update(file.bytes);
  }
  return hash.digest("hex");
}

/** A config loaded together with the files it was loaded from. */
export interface ReadConfig {
  config: LoadedConfig;
  files: ConfigFile[];
  digest: string;
  /**
   * False when the files kept changing while they were read (an editor
   * saving in several writes): the digest may not be of what was loaded.
   */
  settled: boolean;
}

/** How often the files are read again when they changed under the load. */
const SETTLE_TRIES = 5;

/**
 * Loads the config and says exactly which files it was loaded from: the
 * files are read and digested, the config loaded, and the files read again;
 * the same digest both times means the load saw those bytes. A change in
 * between (an edit mid-load) reads and loads it again, a few times.
 */
export function loadConfigRead(root: string, options: { vaultDir?: string } = {}): ReadConfig {
  let files = readConfigFiles(root);
  let digest = configDigest(files);
  for (let tries = 1; ; tries++) {
    const config = loadConfig(root, options);
    const again = readConfigFiles(root);
    const after = configDigest(again);
    if (after === digest) return { config, files, digest, settled: true };
    if (tries >= SETTLE_TRIES) return { config, files: again, digest: after, settled: false };
    files = again;
    digest = after;
  }
}
