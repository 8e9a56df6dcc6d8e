import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOX_CONTRACT, BOX_IMAGE, LABELS } from "../../runner/boundary/box/layout.ts";
import { listRuns, readRecord } from "../../runner/records/run-records/run-record.ts";
import type { ExecEnvelope as Envelope } from "../../runner/work/runs/exec-envelope.ts";
import { testDocker, testEngine } from "../support/docker.ts";
import { makeRosterRoot, type RosterRoot, testRuntime } from "../support/roster-root.ts";

/**
 * `roster box exec`: one command in a fresh box of a worker, answered by one
 * JSON envelope whose exit code is the process's own. No model is involved:
 * the root's model address points nowhere and is never asked.
 */
const docker = await testDocker();
const engineKind = (await testEngine())?.kind;

describe.skipIf(!docker)("roster box exec", () => {
  let deployment: RosterRoot;
  let shared: string;

  beforeAll(async () => {
    deployment = await makeRosterRoot("http://127.0.0.1:9/v1");
    shared = await mkdtemp(join(tmpdir(), "roster-exec-"));
    await mkdir(join(shared, "ref"));
    await writeFile(join(shared, "ref/facts.txt"), "the sky is blue\n");
    await writeFile(
      join(deployment.paths.config, "connections/reference.toml"),
      `kind = "host-dir"\npath = "${join(shared, "ref")}"\nmode = "ro"\n[grant.elf]\n`,
    );
  });
  afterAll(async () => {
    await deployment?.cleanup();
    if (shared) await rm(shared, { recursive: true, force: true });
  });

  const exec = async (command: string, extra: string[] = []) => {
    const result = await deployment.roster(["box", "exec", "elf", ...extra, "--", command], {
      timeoutMs: 60_000,
    });
    const lines = result.stdout.trim().split("\n");
    expect(lines, result.stderr).toHaveLength(1);
    return { code: result.code, envelope: JSON.parse(lines[0] ?? "") as Envelope };
  };

  it("runs in ~/workspace with the worker's mounts and reports exit 0 with both streams", {
    tags: ["runtime"],
  }, async () => {
    const { code, envelope } = await exec(
      "pwd; cat ~/mnt/reference/facts.txt; echo to-stderr >&2; touch ~/mnt/reference/x 2>/dev/null || echo read-only",
    );
    expect(code).toBe(0);
    expect(envelope).toMatchObject({
      status: "ok",
      exit_code: 0,
      stdout: "/home/worker/workspace\nthe sky is blue\nread-only\n",
      stderr: "to-stderr\n",
    });
    expect(envelope.signal).toBeUndefined();
    expect(envelope.duration_ms).toBeGreaterThan(0);
    // recorded like any run, and finished
    const run = listRuns(deployment.paths.state, "elf").find((r) => r.id === envelope.run_id);
    expect(run ? readRecord(run.dir) : undefined).toMatchObject({
      kind: "exec",
      state: "done",
      exit_code: 0,
    });
  });

  it("reports a failing command's own exit code, and exits with it", async () => {
    const { code, envelope } = await exec("echo partial; exit 3");
    expect(code).toBe(3);
    expect(envelope).toMatchObject({ status: "failed", exit_code: 3, stdout: "partial\n" });
    expect(envelope.signal).toBeUndefined();
  });

  it("explains 141 (SIGPIPE under pipefail) without calling it a signal", async () => {
    const { envelope } = await exec("yes | head -n 1");
    expect(envelope).toMatchObject({ status: "failed", exit_code: 141, stdout: "y\n" });
    expect(envelope.note).toMatch(/SIGPIPE/);
    expect(envelope.signal).toBeUndefined();
  });

  it("runs two at once without a server: each run's own gateway, neither refused", async () => {
    // both start an embedded gateway; the second finds [gateway] port taken and takes another
    const [first, second] = await Promise.all([
      exec("sleep 2; echo first"),
      exec("sleep 2; echo second"),
    ]);
    expect(first).toMatchObject({ code: 0, envelope: { status: "ok", stdout: "first\n" } });
    expect(second).toMatchObject({ code: 0, envelope: { status: "ok", stdout: "second\n" } });
  });

  it("kills the box at the timeout: a signal with its reason, no exit code, exit 124", {
    tags: ["runtime"],
  }, async () => {
    const { code, envelope } = await exec("echo started; sleep 60", ["--timeout", "2"]);
    expect(code).toBe(124);
    expect(envelope).toMatchObject({
      status: "timeout",
      exit_code: null,
      signal: "SIGKILL",
      reason: "timeout",
      stdout: "started\n",
    });
    expect(envelope.duration_ms).toBeLessThan(30_000);
    const left = await docker?.listContainers({
      all: true,
      filters: { label: [`roster.run=${envelope.run_id}`] },
    });
    expect(left).toHaveLength(0);
  });

  it("reports a command killed for passing the box's memory limit: SIGKILL, reason memory", {
    tags: ["runtime"],
  }, async () => {
    // the worker lowers its [box] memory; the command then asks for four times that
    const workerToml = join(deployment.paths.config, "workers/elf/worker.toml");
    const before = await readFile(workerToml, "utf8");
    try {
      await writeFile(workerToml, `${before}\n[box]\nmemory = "64m"\n`);
      const { code, envelope } = await exec(
        "echo filling; python3 -c 'print(len(b\"x\" * (256 * 1024 * 1024)))'",
      );
      expect(code).toBe(1);
      expect(envelope).toMatchObject({
        status: "failed",
        exit_code: null,
        signal: "SIGKILL",
        reason: "memory",
        stdout: "filling\n",
      });
      // Podman reports no OOM kill (State.OOMKilled stays false): the SIGKILL is
      // taken for one, and the envelope says it is not confirmed
      if (engineKind === "podman") expect(envelope.note).toMatch(/can't confirm/);
      // gVisor's engine sometimes never hears of the kill: then it is unconfirmed too
      else if (testRuntime() === "runsc" && envelope.note !== undefined)
        expect(envelope.note).toMatch(/can't confirm/);
      else expect(envelope.note).toBeUndefined();
    } finally {
      await writeFile(workerToml, before);
    }
  });

  it("caps each stream at 100 KB with a marker naming what was cut", async () => {
    const { envelope } = await exec(
      "head -c 150000 /dev/zero | tr '\\0' a; head -c 102500 /dev/zero | tr '\\0' b >&2",
    );
    expect(envelope.status).toBe("ok");
    expect(envelope.stdout).toBe(`${"a".repeat(102_400)}…[truncated: 47600 more bytes]`);
    expect(envelope.stderr).toBe(`${"b".repeat(102_400)}…[truncated: 100 more bytes]`);
  });

  it("refuses bad input with one line and exit 2, starting nothing", async () => {
    const runs = listRuns(deployment.paths.state).length;
    const badTimeout = await deployment.roster([
      "box",
      "exec",
      "elf",
      "--timeout",
      "0",
      "--",
      "true",
    ]);
    expect(badTimeout.code).toBe(2);
    expect(badTimeout.stderr).toContain("--timeout must be a whole number of seconds");
    const nobody = await deployment.roster(["box", "exec", "nobody", "--", "true"]);
    expect(nobody.code).toBe(2);
    expect(JSON.parse(nobody.stdout)).toMatchObject({
      status: "error",
      exit_code: null,
      error: expect.stringContaining('no worker named "nobody"'),
    });
    expect(listRuns(deployment.paths.state)).toHaveLength(runs);
  });

  it("refuses an image built for an older box contract (no door), naming it and the fix", async () => {
    // an image of the previous contract: what `roster box build` made before boxes lost their network
    const old = "roster-test-old-contract:latest";
    execFileSync("docker", ["build", "-q", "-t", old, "-"], {
      input: `FROM ${BOX_IMAGE}\nLABEL ${LABELS.box}="1"\n`,
      stdio: ["pipe", "ignore", "inherit"],
    });
    const org = join(deployment.paths.config, "org.toml");
    const text = await readFile(org, "utf8");
    try {
      await writeFile(org, text.replace(/^image = .*$/m, `image = "${old}"`));
      const runs = listRuns(deployment.paths.state).length;
      const result = await deployment.roster(["box", "exec", "elf", "--", "true"]);
      expect(result.code).toBe(2);
      expect(JSON.parse(result.stdout)).toMatchObject({
        status: "error",
        error: `the box image ${old} was built for box contract 1 and roster needs ${BOX_CONTRACT}: rebuild it FROM a current ${BOX_IMAGE} (roster box build)`,
      });
      expect(listRuns(deployment.paths.state)).toHaveLength(runs);
    } finally {
      await writeFile(org, text);
      execFileSync("docker", ["rmi", "-f", old], { stdio: "ignore" });
    }
  });
});
