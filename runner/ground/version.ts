import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Where this checkout lives: the box build context and the engine pin are read
 * from here. Found by walking up to the folder that holds engine/package.json,
 * so it is the same whether this file runs from runner/ground/ or from a chunk
 * of the compiled dist/.
 */
function findProjectRoot(): string {
  const start = dirname(fileURLToPath(import.meta.url));
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "engine", "package.json")) && existsSync(join(dir, "package.json")))
      return `${dir}/`;
    if (dirname(dir) === dir)
      throw new Error(`no roster checkout (engine/package.json) above ${start}`);
  }
}

export const PROJECT_ROOT = findProjectRoot();

function readVersion(file: string, field: "version" | "pi"): string {
  const raw: unknown = JSON.parse(readFileSync(join(PROJECT_ROOT, file), "utf8"));
  if (typeof raw !== "object" || raw === null) return "unknown";
  if (field === "version") {
    const version = (raw as { version?: unknown }).version;
    return typeof version === "string" ? version : "unknown";
  }
  const deps = (raw as { dependencies?: Record<string, unknown> }).dependencies ?? {};
  const pi = deps["@earendil-works/pi-coding-agent"];
  return typeof pi === "string" ? pi : "unknown";
}

/** roster's own version (the root package). */
export const ROSTER_VERSION = readVersion("package.json", "version");

/** The pi engine version pinned in engine/package.json: what `roster box build` bakes. */
export const ENGINE_PIN = readVersion("engine/package.json", "pi");

/**
 * The commit this checkout was at, short, with "+dirty" when its files differ
 * from it: printed beside the version by `roster -V`, so a server started from
 * older code can be told apart from the checkout in front of you. Read from
 * git (locally, no network) when first asked; "unknown" when this is no git
 * checkout or git is missing. dist/ is built inside the checkout and found
 * there (findProjectRoot), so the compiled command reads the same.
 */
let build: string | undefined;
export function rosterBuild(): string {
  if (build !== undefined) return build;
  const git = (...args: string[]) =>
    execFileSync("git", ["-C", PROJECT_ROOT, ...args], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 5_000,
    }).trim();
  try {
    const hash = git("rev-parse", "--short", "HEAD");
    let dirty = false;
    try {
      dirty = git("status", "--porcelain", "--untracked-files=no").length > 0;
    } catch {
      // a hash without the dirty mark is still worth printing
    }
    build = `${hash}${dirty ? "+dirty" : ""}`;
  } catch {
    build = "unknown";
  }
  return build;
}

/** What `roster -V` prints: "0.1.0 (abc1234)". */
export function rosterVersionLine(): string {
  return `${ROSTER_VERSION} (${rosterBuild()})`;
}
