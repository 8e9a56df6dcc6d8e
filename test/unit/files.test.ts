import {
  lstatSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { userFailure } from "../../runner/ground/errors.ts";
import { replaceFile, replaceFileSync } from "../../runner/ground/files/atomic-replace.ts";
import { withFileLock } from "../../runner/ground/files/file-lock.ts";

/**
 * The ground floor every saved file goes through: a reader sees the old bytes
 * or the new ones, a secret keeps its mode, nothing is left beside the file,
 * and a busy lock is refused in words the CLI prints as one line.
 */
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "roster-files-"));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("atomic replace", () => {
  it("replaces the content whole, with the mode asked for, and leaves no temporary", async () => {
    const file = join(dir, "secret.json");
    writeFileSync(file, "old\n", { mode: 0o644 });
    await replaceFile(file, "new\n", { mode: 0o600 });
    expect(readFileSync(file, "utf8")).toBe("new\n");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    replaceFileSync(file, "newer\n");
    expect(readFileSync(file, "utf8")).toBe("newer\n");
    expect(readdirSync(dir)).toEqual(["secret.json"]);
  });

  it("concurrent writers in one process each land whole; the last one wins", async () => {
    const file = join(dir, "state.json");
    const texts = Array.from({ length: 20 }, (_, i) => `${String(i).repeat(50_000)}\n`);
    await Promise.all(texts.map((text) => replaceFile(file, text, { mode: 0o644 })));
    expect(texts).toContain(readFileSync(file, "utf8"));
    expect(readdirSync(dir).filter((name) => name.includes("state"))).toEqual(["state.json"]);
  });

  it("replaces a symlink at the name, never what it points at", async () => {
    const target = join(dir, "outside.txt");
    writeFileSync(target, "untouched\n");
    const link = join(dir, "link.txt");
    symlinkSync(target, link);
    await replaceFile(link, "mine\n");
    expect(readFileSync(target, "utf8")).toBe("untouched\n");
    expect(lstatSync(link).isFile()).toBe(true);
  });

  it("a failed replace leaves the old file as it was and nothing beside it", async () => {
    const file = join(dir, "missing-folder", "x.json");
    await expect(replaceFile(file, "x")).rejects.toThrow(/ENOENT/);
    expect(readdirSync(dir)).not.toContain("missing-folder");
  });
});

describe("file lock", () => {
  it("a second taker is refused while the first holds it, as a one-line failure", async () => {
    const lock = join(dir, "list.lock");
    let refusal: unknown;
    await withFileLock(lock, "the task list", async () => {
      refusal = await withFileLock(lock, "the task list", async () => "taken").catch(
        (error: unknown) => error,
      );
    });
    const failure = userFailure(refusal);
    expect(failure?.message).toMatch(/^the task list is being changed by process \d+; try again$/);
    expect(failure?.exitCode).toBe(1);
    // released: the next taker gets it
    await expect(withFileLock(lock, "the task list", async () => "taken")).resolves.toBe("taken");
  });
});
