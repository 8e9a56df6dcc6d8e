import { execFile, execFileSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { oldNodeRefusal } from "../../runner/ground/host-node.ts";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";
// @ts-expect-error: a plain script, no types
import { markedNode, nodeFloor, pinnedNode } from "../../scripts/host-node.mjs";
import { ROSTER_BIN, runRoster } from "../support/cli.ts";

/**
 * The host runs on a supported Node: the machine's when it is new enough, else
 * the one `npm ci` brought in (.cache/host-node names it). On a machine whose
 * Node is older, this is the path CI takes.
 */
const run = promisify(execFile);
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** What `node --version` says for the Node roster should be on. */
function expectedNode(): string {
  const marked: string | undefined = markedNode(join(PROJECT_ROOT, ".cache", "host-node"));
  return execFileSync(marked ?? "node", ["--version"], { encoding: "utf8" }).trim();
}

const major = (version: string) => Number(version.replace(/^v/, "").split(".")[0]);

describe("the Node the host runs on", () => {
  const floor: number = nodeFloor();

  it("is 22 or newer, as package.json says", () => {
    expect(floor).toBeGreaterThanOrEqual(22);
  });

  it("`roster -V` names it, whether started as a command or by this test's Node", async () => {
    const want = expectedNode();
    expect(major(want)).toBeGreaterThanOrEqual(floor);
    // as npx and a shell start it: its first two lines pick the Node
    const asCommand = await run(ROSTER_BIN, ["-V"]);
    expect(asCommand.stdout).toMatch(new RegExp(` on Node ${want.replaceAll(".", "\\.")} \\(`));
    // as tests and `npm run roster` start it (`node bin/roster.mjs`), on whatever Node that is
    const byNode = await runRoster(["-V"]);
    expect(byNode.code, byNode.stderr).toBe(0);
    expect(byNode.stdout).toContain(` on Node ${want} (`);
    if (markedNode(join(PROJECT_ROOT, ".cache", "host-node")))
      expect(byNode.stdout).toMatch(/\(brought in by npm ci; /);
  });

  it("keeps V8's compiled code for the next start in the checkout's .cache/", async () => {
    const asCommand = await run(ROSTER_BIN, ["-V"]);
    const version = /on Node (v[\d.]+)/.exec(asCommand.stdout)?.[1] ?? "";
    expect(major(version)).toBeGreaterThanOrEqual(22);
    // 22.0 had no compile cache yet: roster starts there as before
    if (version.startsWith("v22.0.")) return;
    const kept = readdirSync(join(PROJECT_ROOT, ".cache", "compiled"));
    expect(kept.some((entry) => entry.startsWith(`${version}-`))).toBe(true);
  });

  it("`roster box doctor --json` says which, even with no engine to report on", async () => {
    const doctor = await runRoster(["box", "doctor", "--json"], {
      DOCKER_HOST: "unix:///nonexistent/roster-host-node-test.sock",
    });
    const { node } = JSON.parse(doctor.stdout) as {
      node: { version: string; path: string; broughtIn: boolean; machine?: { version: string } };
    };
    expect(node.version).toBe(expectedNode());
    const marked = markedNode(join(PROJECT_ROOT, ".cache", "host-node"));
    expect(node.broughtIn).toBe(marked !== undefined);
    if (marked) expect(node.path).toBe(realpathSync(marked));
  });

  it("a marker naming a binary that is gone stops the command with one line, no Node started", async () => {
    const root = mkdtempSync(join(tmpdir(), "roster-host-node-"));
    dirs.push(root);
    mkdirSync(join(root, "bin"));
    mkdirSync(join(root, ".cache"));
    copyFileSync(ROSTER_BIN, join(root, "bin", "roster.mjs"));
    writeFileSync(join(root, ".cache", "host-node"), "/nonexistent/node-gone/bin/node\n");
    const failed = await run("sh", [join(root, "bin", "roster.mjs"), "-V"]).catch(
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect("code" in failed && failed.code).toBe(1);
    expect(failed.stdout).toBe("");
    expect(failed.stderr).toBe(
      `roster: the Node \`npm ci\` brought in (/nonexistent/node-gone/bin/node, in ${root}/.cache/host-node) is not there: run npm ci again\n`,
    );
  });

  it("a Node older than the floor is refused in one line that says what to do", () => {
    expect(oldNodeRefusal("20.20.2")).toMatch(
      /^this is Node v20\.20\.2 \(.+\), and roster needs Node 22 or newer: `npm ci` brings in a supported one, which `npx roster` runs on$/,
    );
    expect(oldNodeRefusal("22.0.0")).toBeUndefined();
    expect(oldNodeRefusal("24.22.3")).toBeUndefined();
  });

  it("refuses to bring in a Node whose tarball's integrity is not pinned", () => {
    const root = mkdtempSync(join(tmpdir(), "roster-host-node-"));
    dirs.push(root);
    writeFileSync(join(root, "package.json"), JSON.stringify({ engines: { node: ">=22" } }));
    mkdirSync(join(root, "runner/boundary/box"), { recursive: true });
    writeFileSync(
      join(root, "runner/boundary/box/offline-base.ts"),
      'export const NODE_PACKAGE_VERSION = "24.0.99";\n',
    );
    expect(() => pinnedNode({ root })).toThrow(
      /^no integrity pinned for node-linux-(x64|arm64)@24\.0\.99 in scripts\/host-node\.mjs/,
    );
    expect(existsSync(join(root, ".cache"))).toBe(false);
  });
});
