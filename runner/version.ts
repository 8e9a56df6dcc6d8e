import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** Where this checkout lives: the box build context and the engine pin are read from here. */
export const PROJECT_ROOT = fileURLToPath(new URL("..", import.meta.url));

function readVersion(relative: string, field: "version" | "pi"): string {
  const raw: unknown = JSON.parse(readFileSync(new URL(relative, import.meta.url), "utf8"));
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
export const ROSTER_VERSION = readVersion("../package.json", "version");

/** The pi engine version pinned in engine/package.json: what `roster box build` bakes. */
export const ENGINE_PIN = readVersion("../engine/package.json", "pi");
