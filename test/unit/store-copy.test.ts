import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storeRoot } from "../../runner/boundary/store/copy.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * `roster box cp-in` / `cp-out`: one file in or out of a worker's store, and
 * never anywhere else — the store is box-written, so its folders may be
 * symlinks a box planted to reach the host.
 */
let deployment: RosterRoot;
let host: string;
let store: string;

beforeAll(async () => {
  deployment = await makeRosterRoot("http://127.0.0.1:9/v1");
  host = await mkdtemp(join(tmpdir(), "roster-cp-"));
  store = storeRoot(deployment.paths, "elf");
  await mkdir(store, { recursive: true });
  await writeFile(join(host, "notes.md"), "# notes\nfrom the host\n");
  await writeFile(join(host, "secret.txt"), "host only\n");
});
afterAll(async () => {
  await deployment?.cleanup();
  if (host) await rm(host, { recursive: true, force: true });
});

describe("roster box cp-in / cp-out", () => {
  it("round-trips a file, making the folders on the way", async () => {
    const into = await deployment.roster([
      "box",
      "cp-in",
      "elf",
      join(host, "notes.md"),
      "projects/a/notes.md",
    ]);
    expect(into.code, into.stderr).toBe(0);
    expect(into.stdout).toBe("copied 22 bytes into elf's store at projects/a/notes.md\n");
    expect(readFileSync(join(store, "projects/a/notes.md"), "utf8")).toBe(
      "# notes\nfrom the host\n",
    );
    await writeFile(join(store, "projects/a/notes.md"), "edited in a box\n");
    const out = await deployment.roster([
      "box",
      "cp-out",
      "elf",
      "projects/a/notes.md",
      join(host, "back.md"),
      "--json",
    ]);
    expect(out.code, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual({
      worker: "elf",
      direction: "out",
      store_path: "projects/a/notes.md",
      bytes: 16,
    });
    expect(await readFile(join(host, "back.md"), "utf8")).toBe("edited in a box\n");
  });

  it("refuses a path that leaves the store by .., naming where it resolved", async () => {
    const result = await deployment.roster([
      "box",
      "cp-in",
      "elf",
      join(host, "notes.md"),
      "../../../vault/planted",
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `resolves to ${join(deployment.paths.data, "vault/planted")}, outside the store ${store}`,
    );
    const absolute = await deployment.roster([
      "box",
      "cp-out",
      "elf",
      "/etc/passwd",
      join(host, "x"),
    ]);
    expect(absolute.code).toBe(2);
    expect(absolute.stderr).toContain("is absolute");
    expect(existsSync(join(host, "x"))).toBe(false);
  });

  it("never follows a symlink a box planted, in a folder or as the file, either way", async () => {
    await symlink(host, join(store, "escape"));
    await symlink(join(host, "secret.txt"), join(store, "linked.txt"));
    const through = await deployment.roster([
      "box",
      "cp-in",
      "elf",
      join(host, "notes.md"),
      "escape/overwritten.txt",
    ]);
    expect(through.code).toBe(2);
    expect(through.stderr).toContain(`goes through a symlink (escape → ${host})`);
    expect(existsSync(join(host, "overwritten.txt"))).toBe(false);

    const over = await deployment.roster([
      "box",
      "cp-in",
      "elf",
      join(host, "notes.md"),
      "linked.txt",
    ]);
    expect(over.code).toBe(2);
    expect(over.stderr).toContain(`linked.txt → ${join(host, "secret.txt")}`);
    expect(await readFile(join(host, "secret.txt"), "utf8")).toBe("host only\n");

    const read = await deployment.roster([
      "box",
      "cp-out",
      "elf",
      "escape/secret.txt",
      join(host, "stolen.txt"),
    ]);
    expect(read.code).toBe(2);
    expect(existsSync(join(host, "stolen.txt"))).toBe(false);
    const readLink = await deployment.roster([
      "box",
      "cp-out",
      "elf",
      "linked.txt",
      join(host, "stolen.txt"),
    ]);
    expect(readLink.code).toBe(2);
    expect(existsSync(join(host, "stolen.txt"))).toBe(false);
  });

  it("refuses what is not a regular file (a FIFO would hang a naive copy), and unknown workers", async () => {
    execFileSync("mkfifo", [join(store, "pipe")]);
    const fifo = await deployment.roster(["box", "cp-out", "elf", "pipe", join(host, "p")]);
    expect(fifo.code).toBe(2);
    expect(fifo.stderr).toContain('"pipe" is not a regular file');
    const nobody = await deployment.roster(["box", "cp-in", "nobody", join(host, "notes.md"), "x"]);
    expect(nobody.code).toBe(2);
    expect(nobody.stderr).toContain('no worker named "nobody"');
  });
});
