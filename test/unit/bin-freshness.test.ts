import { execFile } from "node:child_process";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";

/**
 * `bin/roster.mjs` runs dist/ only while it is current: no source the build
 * listed in dist/sources.json changed or went since. Told apart in a small
 * checkout of its own, whose compiled entry and TypeScript entry each say
 * which they are.
 */
const run = promisify(execFile);
const root = mkdtempSync(join(tmpdir(), "roster-bin-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const SAYS = (who: string) =>
  `export async function main() { process.stdout.write(${JSON.stringify(who)}); return 0; }\n`;
const past = new Date(Date.now() - 60_000);
const later = new Date(Date.now() - 30_000);

function checkout(): void {
  for (const dir of ["bin", "dist", "runner/cli"]) mkdirSync(join(root, dir), { recursive: true });
  copyFileSync(join(PROJECT_ROOT, "bin/roster.mjs"), join(root, "bin/roster.mjs"));
  symlinkSync(join(PROJECT_ROOT, "node_modules"), join(root, "node_modules"));
  copyFileSync(join(PROJECT_ROOT, "package.json"), join(root, "package.json"));
  writeFileSync(join(root, "runner/cli/main.ts"), SAYS("sources"));
  writeFileSync(join(root, "runner/other.ts"), "export const other = 1;\n");
  for (const source of ["runner/cli/main.ts", "runner/other.ts"])
    utimesSync(join(root, source), past, past);
  writeFileSync(join(root, "dist/roster.js"), SAYS("compiled"));
  writeFileSync(join(root, "dist/sources.json"), '["runner/cli/main.ts", "runner/other.ts"]\n');
  utimesSync(join(root, "dist/roster.js"), later, later);
}

/** Which entry the command ran: "compiled" or "sources". */
async function ran(): Promise<string> {
  const { stdout } = await run(process.execPath, [join(root, "bin/roster.mjs"), "-V"]);
  return stdout;
}

describe("bin/roster.mjs and a compiled runner", () => {
  it("runs dist/ while it is current, and the TypeScript once a listed source changed or went", async () => {
    checkout();
    expect(await ran()).toBe("compiled");
    // a source the build did not list (nothing it was built from imports it) changes nothing
    writeFileSync(join(root, "runner/unlisted.ts"), "export {};\n");
    expect(await ran()).toBe("compiled");
    utimesSync(join(root, "runner/other.ts"), new Date(), new Date());
    expect(await ran()).toBe("sources");
    utimesSync(join(root, "runner/other.ts"), past, past);
    expect(await ran()).toBe("compiled");
    rmSync(join(root, "runner/other.ts"));
    expect(await ran()).toBe("sources");
    writeFileSync(join(root, "runner/other.ts"), "export const other = 1;\n");
    utimesSync(join(root, "runner/other.ts"), past, past);
    rmSync(join(root, "dist/sources.json"));
    expect(await ran()).toBe("sources");
  });
});
