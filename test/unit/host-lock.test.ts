/**
 * The host's in-process lock (runner/ground/files/host-lock.ts) between two
 * real processes: what another holds shared refuses an exclusive take here
 * and lets a shared one through; a wait ends the moment the holder lets go,
 * or after its time (false), or when aborted; and a holder killed by SIGKILL
 * leaves the lock free, as the start and settle locks rely on.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { lockHostFile } from "../../runner/ground/files/host-lock.ts";

const dir = mkdtempSync(join(tmpdir(), "host-lock-"));
const file = join(dir, "start.lock");
const children: ChildProcess[] = [];
const handles: FileHandle[] = [];

/** Another process holding the lock until it is told to let go on stdin, or killed. */
async function holder(mode: "shared" | "exclusive"): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [
      "-e",
      `const { tryLock } = require("fs-native-extensions");
       const fd = require("node:fs").openSync(${JSON.stringify(file)}, "a+");
       if (!tryLock(fd, { shared: ${mode === "shared"} })) process.exit(3);
       process.stdout.write("held\\n");
       process.stdin.on("data", () => { require("node:fs").closeSync(fd); process.stdout.write("gone\\n"); });`,
    ],
    { cwd: process.cwd(), stdio: ["pipe", "pipe", "inherit"] },
  );
  children.push(child);
  await said(child, "held");
  return child;
}

function said(child: ChildProcess, word: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes(word)) resolve();
    });
    child.once("exit", (code) => reject(new Error(`holder exited ${code} before "${word}"`)));
  });
}

async function mine(): Promise<FileHandle> {
  const handle = await open(file, "a+");
  handles.push(handle);
  return handle;
}

afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  for (const handle of handles.splice(0)) await handle.close().catch(() => undefined);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a host file lock between processes", () => {
  it("held shared elsewhere: an exclusive take is refused, a shared one goes through", async () => {
    await holder("shared");
    expect(await lockHostFile(await mine(), "exclusive", 0)).toBe(false);
    expect(await lockHostFile(await mine(), "shared", 0)).toBe(true);
  });

  it("a wait is taken the moment the holder lets go, and times out while it does not", async () => {
    const other = await holder("exclusive");
    const began = Date.now();
    expect(await lockHostFile(await mine(), "shared", 150)).toBe(false);
    expect(Date.now() - began).toBeGreaterThanOrEqual(150);
    const waiting = lockHostFile(await mine(), "exclusive", 60_000);
    const gone = said(other, "gone");
    other.stdin?.write("go\n");
    await gone;
    expect(await waiting).toBe(true);
  });

  it("an aborted wait rejects", async () => {
    await holder("exclusive");
    const abort = new AbortController();
    const waiting = lockHostFile(await mine(), "exclusive", 60_000, abort.signal);
    setTimeout(() => abort.abort(), 50);
    await expect(waiting).rejects.toThrow(/abort/i);
  });

  it("a holder killed with SIGKILL holds nothing", async () => {
    const other = await holder("exclusive");
    expect(await lockHostFile(await mine(), "shared", 0)).toBe(false);
    const exited = new Promise((resolve) => other.once("exit", resolve));
    other.kill("SIGKILL");
    await exited;
    expect(await lockHostFile(await mine(), "exclusive", 0)).toBe(true);
  });
});
