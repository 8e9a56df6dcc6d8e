import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { isCI } from "./docker.ts";

/**
 * A real browser for the console's tests: Debian's chromium driven by
 * playwright-core (nothing is downloaded). Locally a missing chromium skips
 * the browser suites with a message; with CI=true it is a failure.
 */
const CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];

export async function testBrowser(): Promise<Browser | undefined> {
  const executablePath = CANDIDATES.find((path) => existsSync(path));
  if (!executablePath) {
    const message = "no chromium (apt-get install chromium)";
    if (isCI) throw new Error(message);
    console.warn(`skipping browser tests: ${message}`);
    return undefined;
  }
  // root in CI: chromium's own sandbox needs a user namespace it may not get
  return chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
}

/** Where a test leaves what a person may want to look at (screenshots). */
export function testOutput(name: string): string {
  const dir = join(import.meta.dirname, "..", "..", "test-output", name);
  mkdirSync(dir, { recursive: true });
  return dir;
}
